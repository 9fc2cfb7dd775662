/**
 * `session-pager import <file>`: import a dsh session.jsonl or a JSON array
 * of events, plain or Zstandard-framed (see maintenance/import.ts). Refuses
 * an existing id (exit 1, session_exists).
 */
import { importSession } from '../maintenance/import.js';
import { DATA_DIR, defineCommand } from './command.js';
import { Progress } from './common.js';
import { withInterrupts } from './interrupt.js';
import { STORE, withStorage } from './store-flag.js';

export const command = defineCommand({
  name: 'import',
  summary: 'import a dsh session.jsonl, or a JSON array of events, plain or Zstandard-framed, as a new session',
  description:
    'The file is JSON lines (a session header, then one event or packed row per line), or one JSON document whose top level is an array of events (an export of SessionEvent[]; its first element is the header when its type is "session", else one is made up from --id and the first event\'s time). Interrupted (SIGINT, SIGTERM), it leaves nothing behind.',
  positionals: [{ name: 'file', describe: 'session.jsonl, session.json (an array) or either Zstandard-framed' }],
  options: {
    data: DATA_DIR,
    store: STORE,
    id: { type: 'string', arg: 'ID', describe: 'session id', defaultText: 'the file name without .zstd or .zst, then .jsonl or .json' },
    format: { type: 'string', choices: ['jsonl', 'binary'], default: 'jsonl', describe: 'frame encoding of the new log' },
  },
  examples: ['session-pager import ~/.dsh/sessions/abc/session.jsonl --id abc --data ./data', 'session-pager import session.jsonl --store s3://bucket/sessions'],
  async run({ values, positionals }, env) {
    const file = positionals[0] as string;
    let bar: Progress | null = null;
    const r = await withInterrupts((signal) =>
      withStorage(values.store, values.data, env, (storage) => importSession(storage, file, {
        id: values.id,
        format: values.format as 'jsonl' | 'binary',
        signal,
        onProgress: (done, total) => {
          bar ??= new Progress(`import ${file}`, total, ' bytes');
          bar.update(done);
        },
      })),
    ).finally(() => (bar as Progress | null)?.done());
    const how = r.format === 'jsonl' ? (r.verbatim ? 'jsonl, lines kept byte for byte' : 'jsonl') : 'binary frames';
    const from = r.document === 'json-array' ? (r.source === 'zstd' ? 'zstd JSON array' : 'JSON array') : r.source;
    process.stdout.write(`imported ${r.id} from ${from}: ${r.events} events, ${r.frames} frames, ${r.logBytes} bytes (${how})\n`);
    return 0;
  },
});
