/**
 * `session-pager gen`: write synthetic sessions for benchmarks and the demo
 * (see docs/gen.md). One line per session on stdout: id, events, bytes.
 */
import { generateSession, minEventsFor } from '../gen/generate.js';
import { isValidSessionId } from '../paths.js';
import { CliError, DATA_OPTION, intFlag, parse, Progress } from './common.js';

const OPTIONS = {
  ...DATA_OPTION,
  events: { type: 'string', default: '10000' },
  'tail-events': { type: 'string', default: '0' },
  sessions: { type: 'string', default: '1' },
  seed: { type: 'string', default: '1' },
  format: { type: 'string', default: 'jsonl' },
  'id-prefix': { type: 'string', default: 'gen' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, OPTIONS, false);
  const dataDir = values.data as string;
  const events = intFlag('events', values.events as string) as number;
  const tail = intFlag('tail-events', values['tail-events'] as string) as number;
  const sessions = intFlag('sessions', values.sessions as string, 1) as number;
  const seed = intFlag('seed', values.seed as string) as number;
  const format = values.format;
  if (format !== 'jsonl' && format !== 'binary') throw new CliError(`--format must be jsonl or binary, got ${JSON.stringify(format)}`);
  if (events < minEventsFor(tail)) throw new CliError(`--events must be at least ${minEventsFor(tail)} to hold --tail-events ${tail}`);
  const prefix = values['id-prefix'] as string;
  for (const k of [0, sessions - 1]) {
    if (!isValidSessionId(`${prefix}-${seed}-${k}`)) throw new CliError(`--id-prefix ${JSON.stringify(prefix)} does not give valid session ids`);
  }
  for (let k = 0; k < sessions; k++) {
    const id = `${prefix}-${seed}-${k}`;
    const progress = new Progress(id, events, ' events');
    const r = await generateSession(dataDir, { id, events, tailEvents: tail, seed, stream: k, format, onProgress: (n) => progress.update(n) });
    progress.done();
    process.stdout.write(`${r.id} ${r.events} events ${r.bytes} bytes\n`);
  }
  return 0;
}
