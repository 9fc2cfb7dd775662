/**
 * The page workers' CommonJS packages (piscina, @toondepauw/node-zstd)
 * loaded with require(), not `import`, as the server's are
 * (main/server/cjs.ts; the workers may not import it). Imported from an ES
 * module, a CommonJS package goes through Node 20's JavaScript CommonJS
 * lexer, run in the importing thread over the package and what it
 * re-exports; in each page worker that lexer's loop grew hot during the
 * worker's start and V8 compiled it (`parseSource`, a large TurboFan
 * compile on the helper threads the workers' own warm-up compiles need),
 * all before the server is ready (issue 12; docs/benchmarks.md).
 */
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);
