#!/usr/bin/env node
// The one executable (SPEC section 7). The code lives in dist/, built by `npm run build` (run by `prepare`).
import { main } from '../dist/main/cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`session-pager: ${err && err.message ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
