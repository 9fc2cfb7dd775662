#!/bin/sh
':' /*
# The one executable (SPEC section 7), a file both sh and node read. Run as a command (npm's bin
# link, `./bin/session-pager.js`), sh reads these lines and hands over to node with `exec`: one
# process, as before. Run as `node bin/session-pager.js`, node skips them (a string, a comment).
# For `serve` only, two settings read only when a process starts (Node 20 can neither call
# mallopt/malloc_trim nor exec itself, so they are set here): glibc keeps no buffer of 256 KiB or
# more in its heaps once freed (its default threshold rises after each large free, and the
# warm-up's and the compiler threads' freed buffers then stayed resident in the idle server; at
# 64 KiB, as first set, every page's ~100 KB buffers were mapped and faulted in afresh: ~10% of
# the CPU a page over HTTP at 16 connections, docs/benchmarks.md "proof (twelfth session), second
# round"), and
# V8 runs no more helper threads than there are CPUs (Node's default is 4: each has a malloc
# arena that keeps what its compiles freed). Together ~10 MB less resident while idle, pages no
# slower (docs/benchmarks.md, "Issue 12: glibc's threshold and V8's helper threads set by the
# launcher"; docs/decisions.md). A threshold or pool size the user set is kept. The threshold is
# the start's: SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD tells the server it was set here, and once
# warm the server gives the warm-up's memory back and raises it for serving (src/main/heap-release.ts).
case "$1" in
  serve)
    case ":$GLIBC_TUNABLES:" in
      *:glibc.malloc.mmap_threshold=*) ;;
      *) GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.mmap_threshold=262144"; export GLIBC_TUNABLES
         SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD=262144; export SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD ;;
    esac
    case " $NODE_OPTIONS " in
      *" --v8-pool-size"*) ;;
      *)
        cpus=$(nproc 2>/dev/null)
        case "$cpus" in
          1 | 2 | 3) exec node --v8-pool-size="$cpus" "$0" "$@" ;;
        esac ;;
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
