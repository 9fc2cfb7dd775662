#!/bin/sh
':' /*
# The one executable (SPEC section 7), a file both sh and node read. Run as a command (npm's bin
# link, `./bin/session-pager.js`), sh reads these lines and hands over to node with `exec`: one
# process, as before. Run as `node bin/session-pager.js`, node skips them (a string, a comment).
# For `serve` only, glibc keeps no buffer of 128 KiB or more in its heaps once freed: its default
# threshold rises after each large free, and the warm-up's and the compiler threads' freed
# buffers then stayed resident in the idle server, ~6-10 MB of it (docs/benchmarks.md, "Issue 12:
# glibc's threshold set by the launcher"; docs/decisions.md). A threshold the user set is kept.
case "$1" in
  serve)
    case ":$GLIBC_TUNABLES:" in
      *:glibc.malloc.mmap_threshold=*) ;;
      *) GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.mmap_threshold=131072"; export GLIBC_TUNABLES ;;
    esac ;;
esac
exec node "$0" "$@"
*/
// The code lives in dist/, built by `npm run build` (run by `prepare`).
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
