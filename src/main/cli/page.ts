/**
 * `session-pager page <id> [--through-seq N] [--before-seq N] [--max-messages N] [--max-bytes N]`:
 * one page as the JSON of SPEC section 4 on stdout, through the same store
 * path the HTTP service uses.
 */
import { openStore } from '../store.js';
import type { PageParams } from '../core/types.js';
import { CliError, DATA_OPTION, intFlag, parse } from './common.js';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    ...DATA_OPTION,
    'through-seq': { type: 'string' },
    'before-seq': { type: 'string' },
    'max-messages': { type: 'string' },
    'max-bytes': { type: 'string' },
    workers: { type: 'string' },
  });
  if (positionals.length !== 1) throw new CliError('usage: session-pager page <id> [--through-seq N] [--before-seq N] [--max-messages N] [--max-bytes N] [--data DIR]');
  const params: PageParams = {};
  const through = intFlag('through-seq', values['through-seq'] as string | undefined);
  const before = intFlag('before-seq', values['before-seq'] as string | undefined);
  const maxMessages = intFlag('max-messages', values['max-messages'] as string | undefined);
  const maxBytes = intFlag('max-bytes', values['max-bytes'] as string | undefined);
  if (through !== undefined) params.throughSeq = through;
  if (before !== undefined) params.beforeSeq = before;
  if (maxMessages !== undefined) params.maxMessages = maxMessages;
  if (maxBytes !== undefined) params.maxBytes = maxBytes;
  // One page, then exit: the workers' JIT warm-up (~1.2 s) costs more than it saves on one
  // page, even the 5M tail (whole command 1.74 -> 0.50 s, same bytes). An explicit setting wins.
  process.env.SESSION_PAGER_JIT_WARMUP ??= '0';
  const store = await openStore({ dataDir: values.data as string, workers: intFlag('workers', values.workers as string | undefined, 1), readOnly: true });
  try {
    const page = await store.pageBuffer(positionals[0] as string, params);
    await new Promise<void>((resolve, reject) => {
      process.stdout.write(page.body, (err) => (err ? reject(err) : resolve()));
    });
    process.stdout.write('\n');
    return 0;
  } finally {
    await store.close();
  }
}
