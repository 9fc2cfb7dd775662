/**
 * The server's CommonJS packages (fastify, its plugins, prom-client) loaded
 * with require(), not `import`. Node 20 runs its CommonJS lexer (the
 * JavaScript cjs-module-lexer) over every CommonJS module an ES module
 * imports, and over what it re-exports, to find named exports; in a fresh
 * process that lexer's loop grows hot and V8 compiles it, all before the
 * server is ready. Loading these five with require() took ~80-100 ms less CPU
 * of a fresh process (issue 12: ready within 1 s, on two cores shared with the
 * page workers' warm-up; docs/benchmarks.md). Their types still come from
 * `import type`, so nothing about them goes unchecked.
 */
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);
