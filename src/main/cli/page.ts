/**
 * `session-pager page <id>`: one page as the JSON of SPEC section 4 on
 * stdout, through the same store path the HTTP service uses.
 */
import { openStore, warmUpFromEnv } from '../store.js';
import type { PageParams } from '../../core/types.js';
import { DATA_DIR, defineCommand } from './command.js';
import { STORE, storageFromFlag } from './store-flag.js';
import { checkWarmUpSwitches } from './env-values.js';

export const command = defineCommand({
  name: 'page',
  summary: 'print one page of a session as JSON (SPEC section 4) on stdout',
  positionals: [{ name: 'id', describe: 'session id' }],
  options: {
    data: DATA_DIR,
    store: STORE,
    'through-seq': { type: 'int', describe: 'pin the cut at this seq', defaultText: 'the last committed seq' },
    'before-seq': { type: 'int', describe: 'exclusive upper bound, for older pages (the previous page\'s fromSeq)', defaultText: 'none' },
    'max-messages': { type: 'int', describe: 'counted messages per page, 1 to 1000', defaultText: '50' },
    'max-bytes': { type: 'int', describe: 'soft target for the stored bytes the page covers', defaultText: 'none' },
    workers: { type: 'int', min: 1, describe: 'decode on this many worker threads', defaultText: 'none: this thread decodes (faster for one page)' },
  },
  existingDir: 'data',
  examples: ['session-pager page demo-long --max-messages 5 --data ./.demo-data'],
  async run({ values, positionals }, env) {
    const params: PageParams = {};
    if (values['through-seq'] !== undefined) params.throughSeq = values['through-seq'];
    if (values['before-seq'] !== undefined) params.beforeSeq = values['before-seq'];
    if (values['max-messages'] !== undefined) params.maxMessages = values['max-messages'];
    if (values['max-bytes'] !== undefined) params.maxBytes = values['max-bytes'];
    // One page, then exit: the workers' JIT warm-up (~1.2 s) costs more than it saves on one
    // page, even the 5M tail (whole command 1.74 -> 0.50 s, same bytes), and so does starting
    // workers at all (docs/benchmarks.md, "Start-up"): this thread decodes unless --workers is given.
    checkWarmUpSwitches(env);
    const warmUp = warmUpFromEnv(env, { jit: false });
    const inThread = values.workers === undefined;
    const storage = await storageFromFlag(values.store, values.data, env);
    const store = await openStore({ dataDir: values.data, ...(storage !== null ? { storage, closeStorage: true } : {}), workers: values.workers, inThread, readOnly: true, warmUp });
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
  },
});
