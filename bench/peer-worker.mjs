// A peer worker thread: its own SQLite connection, one page per message.
import { parentPort, workerData } from 'node:worker_threads';
import { PeerReader } from './sqlite-peer.mjs';

const reader = new PeerReader(workerData.dbPath);
parentPort.on('message', ({ id, page }) => {
  try {
    parentPort.postMessage({ id, bytes: reader.page(page.id, page.params).length });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err?.message ?? err) });
  }
});
