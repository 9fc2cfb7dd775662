// A writer in its own process that publishes its appends on Redis, for the bus tests:
// `node bus-append-child.mjs <dist index.js> <dataDir> <id> <redisUrl> <batches> <batchSize> <delayMs>`
// appends `batches` batches of `tickEvents` to an existing session through a store
// with `redisUrl`, `delayMs` apart, printing `appended <toSeq>` per batch, then `done`.
import { tickEvents } from './tick-events.mjs';

const [distIndex, dataDir, id, redisUrl, batches, batchSize, delayMs] = process.argv.slice(2);
const { openStore } = await import(distIndex);

const store = await openStore({ dataDir, redisUrl, workers: 1, warmUp: { jit: false, pagePath: false } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let b = 0; b < Number(batches); b++) {
  const next = await store.nextSeq(id);
  const r = await store.append(id, tickEvents(next, Number(batchSize)));
  process.stdout.write(`appended ${r.toSeq}\n`);
  if (Number(delayMs) > 0) await sleep(Number(delayMs));
}
// close() lets the last publish finish.
await store.close();
process.stdout.write('done\n');
