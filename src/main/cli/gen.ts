/**
 * `session-pager gen`: write synthetic sessions for benchmarks and the demo
 * (see docs/gen.md). One line per session on stdout: id, events, bytes.
 */
import { generateSession, minEventsFor } from '../gen/generate.js';
import { isValidSessionId } from '../paths.js';
import { DATA_DIR, defineCommand } from './command.js';
import { CliError, Progress } from './common.js';
import { withInterrupts } from './interrupt.js';
import { STORE, withStorage } from './store-flag.js';
import { quoteInput } from '../../core/excerpt.js';

export const command = defineCommand({
  name: 'gen',
  summary: 'generate synthetic sessions for benchmarks and the demo (docs/gen.md)',
  description: 'Interrupted (SIGINT, SIGTERM), the unfinished session is removed; sessions already printed are complete.',
  options: {
    data: DATA_DIR,
    store: STORE,
    events: { type: 'int', default: 10000, describe: 'events per session' },
    'tail-events': { type: 'int', default: 0, describe: 'events of the in-flight streamed message at the end' },
    sessions: { type: 'int', min: 1, default: 1, describe: 'number of sessions' },
    seed: { type: 'int', default: 1, describe: 'PRNG seed (same seed, same sessions)' },
    format: { type: 'string', choices: ['jsonl', 'binary'], default: 'jsonl', describe: 'frame encoding' },
    'id-prefix': { type: 'string', arg: 'P', default: 'gen', describe: 'session ids are P-SEED-K' },
  },
  examples: ['session-pager gen --events 1000000 --tail-events 100000 --sessions 2 --seed 7 --data ./bench-data', 'session-pager gen --events 100000 --store s3://bucket/sessions'],
  async run({ values }, env) {
    const { data: dataDir, events, seed, sessions } = values;
    const tail = values['tail-events'];
    const format = values.format as 'jsonl' | 'binary';
    if (events < minEventsFor(tail)) throw new CliError(`--events must be at least ${minEventsFor(tail)} to hold --tail-events ${tail}`);
    const prefix = values['id-prefix'];
    for (const k of [0, sessions - 1]) {
      if (!isValidSessionId(`${prefix}-${seed}-${k}`)) throw new CliError(`--id-prefix ${quoteInput(prefix)} does not give valid session ids`);
    }
    await withInterrupts((signal) => withStorage(values.store, dataDir, env, async (storage) => {
      for (let k = 0; k < sessions; k++) {
        const id = `${prefix}-${seed}-${k}`;
        const progress = new Progress(id, events, ' events');
        const r = await generateSession(storage, { id, events, tailEvents: tail, seed, stream: k, format, onProgress: (n) => progress.update(n) }, { signal }).finally(() =>
          progress.done(),
        );
        process.stdout.write(`${r.id} ${r.events} events ${r.bytes} bytes\n`);
      }
    }));
    return 0;
  },
});
