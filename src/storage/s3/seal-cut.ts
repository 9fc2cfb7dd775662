/**
 * Where a segment ends: at a frame boundary the entry sidecar names. The
 * unsealed tail of the entry sidecar is read line by line from where its
 * sealed part ends; its frames must continue the sealed log exactly
 * (offset = the end of the previous frame). The cut is the end of the last
 * complete frame that keeps the segment within `maxBytes` of log (at least
 * one frame, however large), never past the log's end. Anything else
 * (lines that do not continue the log, a partial line) stops the walk:
 * those bytes stay in the tail. Pure.
 */

export interface SealCut {
  /** Log offset the segment's frames end at. */
  events: number;
  /** Entry-sidecar offset its lines end at. */
  entries: number;
  /** Frames (entry lines) in the segment. */
  frames: number;
}

/**
 * `entriesTail`: the entry sidecar's bytes from `entriesBase` (a line start);
 * `eventsBase`, `eventsEnd`: the log's sealed end and its size.
 */
export function sealCut(entriesTail: Buffer, entriesBase: number, eventsBase: number, eventsEnd: number, maxBytes: number): SealCut {
  const cut: SealCut = { events: eventsBase, entries: entriesBase, frames: 0 };
  let lineStart = 0;
  let cursor = eventsBase;
  while (lineStart < entriesTail.length) {
    const nl = entriesTail.indexOf(0x0a, lineStart);
    if (nl === -1) break;
    let e: { offset?: unknown; length?: unknown };
    try {
      e = JSON.parse(entriesTail.toString('utf8', lineStart, nl)) as typeof e;
    } catch {
      break;
    }
    if (typeof e.offset !== 'number' || typeof e.length !== 'number' || !Number.isSafeInteger(e.offset) || !Number.isSafeInteger(e.length) || e.length <= 0) break;
    if (e.offset !== cursor) break;
    const end = e.offset + e.length;
    if (end > eventsEnd) break;
    if (cut.frames > 0 && end - eventsBase > maxBytes) break;
    cursor = end;
    lineStart = nl + 1;
    cut.events = end;
    cut.entries = entriesBase + lineStart;
    cut.frames++;
  }
  return cut;
}
