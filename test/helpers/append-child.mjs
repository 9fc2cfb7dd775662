// A writer in its own process, for the cross-process follow test:
// `node append-child.mjs <dist index.js> <dataDir> <id> <batches> <batchSize> <delayMs>`
// appends `batches` batches of `tickEvents` to an existing session, `delayMs` apart,
// printing `appended <toSeq> <epoch ms after fsync>` per batch, then `done`.
import { tickEvents } from './tick-events.mjs';

const [distIndex, dataDir, id, batches, batchSize, delayMs] = process.argv.slice(2);
const { SessionWriter } = await import(distIndex);

const w = await SessionWriter.open(dataDir, id);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let b = 0; b < Number(batches); b++) {
  const r = await w.append(tickEvents(w.nextSeq, Number(batchSize)));
  process.stdout.write(`appended ${r.toSeq} ${Date.now()}\n`);
  if (Number(delayMs) > 0) await sleep(Number(delayMs));
}
await w.close();
process.stdout.write('done\n');
