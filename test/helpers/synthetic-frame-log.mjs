// The entry sidecar the planner probes walk: `frames` frames past 2^31 bytes, shaped as the planner
// warm-up's synthetic session (a message every 40th frame, text chunks between), as entries, its
// JSONL sidecar bytes and its index records, with a backward source over each.
export async function syntheticFrameLog(dist, frames) {
  const { encodeEntry } = await import(`${dist}/streams/entry-codec.js`);
  const { INDEX_RECORD_BYTES, indexBackward, indexRecords } = await import(`${dist}/streams/frame-index-file.js`);
  const { BackwardEntries } = await import(`${dist}/streams/entries-file.js`);
  const head = { v: 1, seq: 0, count: 0, offset: 0, length: 2 ** 31 + 4096, kind: 'session', schema: 1 };
  const entries = [head];
  let seq = 0;
  let offset = head.length;
  for (let i = 0; i < frames; i++) {
    const counted = i % 40 === 0;
    const count = counted ? 1 : 1 + (i % 37);
    const e = { v: 1, seq, count, offset, length: 60 + count * 11, kind: counted ? 'assistant/message' : 'text-chunks', schema: 1 };
    if (counted) e.group = Math.max(0, seq - 30);
    entries.push(e);
    seq += count;
    offset += e.length;
  }
  const bytes = Buffer.from(entries.map((e) => encodeEntry(e)).join(''));
  const index = indexRecords(entries);
  return {
    // A small integer, as a real log's is (read from a field that once held a double, it came boxed,
    // and the walk, compiled for small integers, deoptimized on it: not what the probes look for).
    lastSeq: (seq - 1) | 0,
    records: () => indexBackward((first, n) => index.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES), entries.length - 1),
    lines: () =>
      new BackwardEntries(async (pos, len) => bytes.subarray(pos, Math.min(bytes.length, pos + len)), bytes.length, () => {
        throw new Error('the probe sidecar lines are canonical');
      }),
  };
}
