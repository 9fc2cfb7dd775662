/**
 * The CommonJS packages the main thread loads at start (fastify, its plugins,
 * prom-client, piscina, @toondepauw/node-zstd) are loaded with require(), not
 * `import`. Node 20 runs its CommonJS lexer (the JavaScript cjs-module-lexer)
 * over every CommonJS module an ES module imports, and over what it
 * re-exports, to find named exports; in a fresh process that lexer's loop
 * grows hot and V8 compiles it, all before the server is ready. The server's
 * five by require() took ~80-100 ms less CPU of a fresh process, piscina and
 * the zstd binding ~55-65 ms more in each thread that loads them (issue 12:
 * ready within 1 s, on two cores shared with the page workers' warm-up;
 * docs/benchmarks.md). Their types still come from `import type`, so nothing
 * about them goes unchecked. The page workers have their own (workers/cjs.ts:
 * they may not import this layer).
 */
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);
