/**
 * `session-pager import <file>`: import a dsh session.jsonl or
 * Zstandard-framed session.jsonl.zstd (see maintenance/import.ts). Refuses
 * an existing id (exit 1, session_exists).
 */
import { importSession } from '../maintenance/import.js';
import { DATA_DIR, defineCommand } from './command.js';
import { Progress } from './common.js';

export const command = defineCommand({
  name: 'import',
  summary: 'import a dsh session.jsonl (plain or Zstandard-framed) as a new session',
  positionals: [{ name: 'file', describe: 'session.jsonl or session.jsonl.zstd' }],
  options: {
    data: DATA_DIR,
    id: { type: 'string', arg: 'ID', describe: 'session id', defaultText: "the header's id, else the file name" },
    format: { type: 'string', choices: ['jsonl', 'binary'], default: 'jsonl', describe: 'frame encoding of the new log' },
  },
  examples: ['session-pager import ~/.dsh/sessions/abc/session.jsonl --id abc --data ./data'],
  async run({ values, positionals }) {
    const file = positionals[0] as string;
    let bar: Progress | null = null;
    const r = await importSession(values.data, file, {
      id: values.id,
      format: values.format as 'jsonl' | 'binary',
      onProgress: (done, total) => {
        bar ??= new Progress(`import ${file}`, total, ' bytes');
        bar.update(done);
      },
    });
    (bar as Progress | null)?.done();
    const how = r.format === 'jsonl' ? (r.verbatim ? 'jsonl, lines kept byte for byte' : 'jsonl') : 'binary frames';
    process.stdout.write(`imported ${r.id} from ${r.source}: ${r.events} events, ${r.frames} frames, ${r.logBytes} bytes (${how})\n`);
    return 0;
  },
});
