// A peer worker thread: its own SQLite connection, one page per message.
// In process (peer-child.mjs) it answers the page's length; for the peer's
// HTTP server (peer-server.mjs, `body: true`) the page's bytes themselves,
// compressed when asked, moved to the main thread without a copy.
import { parentPort, workerData } from 'node:worker_threads';
import { PeerReader } from './sqlite-peer.mjs';

const dist = new URL('../dist/', import.meta.url);
const reader = new PeerReader(workerData.dbPath);
let compress; // loaded on the first compressed answer: the same codings and levels as the service's
// The service's default levels, read from its options (zstd: page-coding.ts's DEFAULT_ZSTD_LEVEL, 3;
// this file said zstd 6 after the service went to 3, so a compressed lane compared unequal levels).
let levels;

/** A Buffer that owns its whole ArrayBuffer (small Buffer.from results share a pool, which must not move). */
function owned(buf) {
  if (buf.byteOffset === 0 && buf.buffer.byteLength === buf.length) return buf;
  const out = Buffer.allocUnsafeSlow(buf.length);
  buf.copy(out);
  return out;
}

parentPort.on('message', async ({ id, page, body, encoding }) => {
  // A message with no page asks only whether this thread is up: its connection is open by now
  // (the reader is made before this handler), so the answer says the worker is ready.
  if (page === undefined) {
    parentPort.postMessage({ id, bytes: 0 });
    return;
  }
  try {
    const bytes = reader.page(page.id, page.params);
    if (!body) {
      parentPort.postMessage({ id, bytes: bytes.length });
      return;
    }
    let out = bytes;
    if (encoding) {
      compress ??= await import(new URL('main/server/page-encoding.js', dist).href);
      levels ??= (await import(new URL('main/server/options.js', dist).href)).resolveOptions().compression;
      out = await compress.compressBody(bytes, encoding, compress.levelFor(encoding, bytes.length, levels));
    }
    const moved = owned(out);
    parentPort.postMessage({ id, body: moved, bytes: bytes.length }, [moved.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: String(err?.message ?? err) });
  }
});
