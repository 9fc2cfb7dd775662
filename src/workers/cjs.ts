/**
 * The page workers' CommonJS packages (piscina, @toondepauw/node-zstd) loaded
 * with require(), not `import`, for the reason main/cjs.ts gives: imported
 * from an ES module, each worker ran Node 20's CommonJS lexer over them and
 * V8 compiled that lexer in the worker, ~55-65 ms of CPU a thread before the
 * server is ready (issue 12).
 */
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);
