/**
 * JIT warm-up for the main thread's half of the page path: plan pages over
 * a synthetic entry sidecar held in memory, so the first real page of a
 * fresh process does not walk its sidecar interpreted (measured: a cold
 * plan of a 15k-frame tail page took ~60 ms, a warm one ~15 ms).
 */
import { encodeEntry } from '../../streams/entry-codec.js';
import { INDEX_RECORD_BYTES, indexBackward, indexRecords } from '../../streams/frame-index-file.js';
import { BackwardEntries } from '../../streams/entries-file.js';
import { planPage } from '../core/page-planner.js';
import { resolvePageParams } from '../core/page-rule.js';
import type { EntryLine } from '../core/types.js';

function syntheticSidecar(frames: number): { bytes: Buffer; index: Buffer; lastSeq: number } {
  const lines: string[] = [encodeEntry({ v: 1, seq: 0, count: 0, offset: 0, length: 120, kind: 'session', schema: 1 })];
  const entries: EntryLine[] = [{ v: 1, seq: 0, count: 0, offset: 0, length: 120, kind: 'session', schema: 1 }];
  let seq = 0;
  let offset = 120;
  for (let i = 0; i < frames; i++) {
    const counted = i % 40 === 0;
    const count = counted ? 1 : 1 + (i % 37);
    const e: EntryLine = { v: 1, seq, count, offset, length: 60 + count * 11, kind: counted ? 'assistant/message' : 'text-chunks', schema: 1 };
    if (counted) e.group = Math.max(0, seq - 30);
    lines.push(encodeEntry(e));
    entries.push(e);
    seq += count;
    offset += e.length;
  }
  return { bytes: Buffer.from(lines.join('')), index: indexRecords(entries), lastSeq: seq - 1 };
}

/** Kept between two warm-ups (`keep`): a second one reuses it instead of allocating it again (~15 MB of peak RSS). */
let sidecar: ReturnType<typeof syntheticSidecar> | null = null;

export async function warmUpPlanner(rounds = 12, keep = false): Promise<void> {
  const kept = sidecar ?? syntheticSidecar(20_000);
  sidecar = keep ? kept : null;
  const { bytes, index, lastSeq } = kept;
  const records = index.length / INDEX_RECORD_BYTES;
  const readRecords = (first: number, n: number) => index.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES);
  const read = async (pos: number, len: number) => bytes.subarray(pos, Math.min(bytes.length, pos + len));
  const slow = (): EntryLine => {
    throw new Error('synthetic sidecar lines are canonical');
  };
  for (let r = 0; r < rounds; r++) {
    const p = resolvePageParams({ maxMessages: r % 2 === 0 ? 400 : 50, ...(r % 3 === 0 ? { maxBytes: 200_000 } : {}) }, lastSeq);
    // Both planners: the JSONL sidecar walk and the binary frame index walk.
    await planPage(p, new BackwardEntries(read, bytes.length, slow));
    await planPage(p, indexBackward(readRecords, records - 1));
  }
}
