/**
 * `session-pager import <file> [--id ID] [--format jsonl|binary] [--data DIR]`:
 * import a dsh session.jsonl or Zstandard-framed session.jsonl.zstd (see
 * maintenance/import.ts). Refuses an existing id (exit 1, session_exists).
 */
import { importSession } from '../maintenance/import.js';
import { CliError, DATA_OPTION, parse, Progress } from './common.js';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { ...DATA_OPTION, id: { type: 'string' }, format: { type: 'string', default: 'jsonl' } });
  if (positionals.length !== 1) throw new CliError('usage: import <file> [--id ID] [--format jsonl|binary] [--data DIR]');
  const format = values.format;
  if (format !== 'jsonl' && format !== 'binary') throw new CliError(`--format must be jsonl or binary, got ${JSON.stringify(format)}`);
  const file = positionals[0] as string;
  let bar: Progress | null = null;
  const r = await importSession(values.data as string, file, {
    id: values.id as string | undefined,
    format,
    onProgress: (done, total) => {
      bar ??= new Progress(`import ${file}`, total, ' bytes');
      bar.update(done);
    },
  });
  (bar as Progress | null)?.done();
  const how = r.format === 'jsonl' ? (r.verbatim ? 'jsonl, lines kept byte for byte' : 'jsonl') : 'binary frames';
  process.stdout.write(`imported ${r.id} from ${r.source}: ${r.events} events, ${r.frames} frames, ${r.logBytes} bytes (${how})\n`);
  return 0;
}
