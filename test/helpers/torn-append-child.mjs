// A writer killed by SIGKILL in the middle of one write, for the crash fault suite:
// `node torn-append-child.mjs <dataDir> <id> <log|entries> <fraction>` (runs the built dist/)
// opens the session (as the server's writer would), then appends the events read as a
// JSON array from stdin; the append's write to the log (`log`) or to the entry sidecar
// (`entries`) writes only its first bytes (about `fraction` of them; for the sidecar never
// a whole number of lines) and the process SIGKILLs itself before that write returns.
// It prints `{"target","pos","cut","length"}` (where the write went, the bytes written,
// the bytes it had) just before the kill. A kill landing inside a write is what random
// kill moments almost never hit; this makes it happen, with a real SIGKILL.
import { LocalBackend, SessionWriter } from '../../dist/main/index.js';

const [dataDir, id, target, fraction] = process.argv.slice(2);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const events = JSON.parse(input);

const inner = new LocalBackend(dataDir);
let armed = false;
const suffix = target === 'log' ? '.events' : '.entries.jsonl';

function tornFile(file) {
  return new Proxy(file, {
    get(f, prop) {
      if (prop === 'write') {
        return async (data, pos) => {
          if (!armed) return f.write(data, pos);
          let cut = Math.max(1, Math.min(data.length - 1, Math.floor(data.length * Number(fraction))));
          // Part of a line, never whole lines only (that is the stale-metadata case, not this one).
          if (target === 'entries') while (cut > 1 && data[cut - 1] === 0x0a) cut--;
          await f.write(data.subarray(0, cut), pos);
          process.stdout.write(JSON.stringify({ target, pos, cut, length: data.length }) + '\n');
          process.kill(process.pid, 'SIGKILL');
          await new Promise(() => undefined);
        };
      }
      const v = Reflect.get(f, prop, f);
      return typeof v === 'function' ? v.bind(f) : v;
    },
  });
}

const backend = new Proxy(inner, {
  get(b, prop) {
    if (prop === 'openWritable') {
      return async (key, mode) => {
        const file = await b.openWritable(key, mode);
        return key.endsWith(suffix) ? tornFile(file) : file;
      };
    }
    const v = Reflect.get(b, prop, b);
    return typeof v === 'function' ? v.bind(b) : v;
  },
});

const w = await SessionWriter.open(backend, id);
armed = true;
await w.append(events);
process.stdout.write('not killed\n');
process.exit(1);
