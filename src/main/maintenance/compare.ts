/**
 * Line-by-line agreement of an existing entry sidecar with the entries a full
 * scan of the log produces (`doctor --deep`, `repair`). Streams the sidecar
 * alongside the scan; holds one block of it at a time.
 */
import type { EntryLine } from '../../core/types.js';
import { parseEntry } from '../../streams/entry-codec.js';
import { ObjectLineReader } from './io.js';
import { isNotFound, type StorageBackend } from '../../storage/backend.js';
import { quoteValue } from '../../core/excerpt.js';

export interface SidecarComparison {
  /** The entry sidecar exists. */
  present: boolean;
  /** Lines of the sidecar read (all of them once `finish` ran). */
  existingLines: number;
  /** Scan entries that found an agreeing sidecar line. */
  matched: number;
  /** Scan entries seen. */
  scanned: number;
  /** First disagreement: where in the sidecar and why. */
  mismatch: { offset: number; line: number; message: string } | null;
  /** Sidecar lines beyond the scan's entries (it indexes frames the log does not validly have). */
  extraLines: number;
  /** Every sidecar line agrees and there are exactly as many as scan entries. */
  exact: boolean;
  /** Every sidecar line agrees; the scan found more frames (the log is ahead of the sidecar). */
  prefix: boolean;
}

function same(a: EntryLine, b: EntryLine, corrupt: boolean): string | null {
  const keys: (keyof EntryLine)[] = corrupt ? ['seq', 'offset', 'length'] : ['v', 'seq', 'count', 'offset', 'length', 'kind', 'schema', 'group'];
  for (const k of keys) {
    if (a[k] !== b[k]) return `${k} is ${quoteValue(b[k])}, the log says ${quoteValue(a[k])}`;
  }
  return null;
}

export class SidecarComparer {
  private readonly result: SidecarComparison = { present: false, existingLines: 0, matched: 0, scanned: 0, mismatch: null, extraLines: 0, exact: false, prefix: false };
  private ended = false;

  private constructor(private readonly reader: ObjectLineReader | null) {
    this.result.present = reader !== null;
  }

  /** `limit`: compare only the sidecar's first bytes (the whole lines loadSessionState trusts). */
  static async open(storage: StorageBackend, key: string, limit = Infinity): Promise<SidecarComparer> {
    try {
      return new SidecarComparer(await ObjectLineReader.open(storage, key, undefined, limit));
    } catch (err) {
      if (isNotFound(err)) return new SidecarComparer(null);
      throw err;
    }
  }

  /** Compare the next scan entry with the next sidecar line. */
  async check(entry: EntryLine, corrupt: boolean): Promise<void> {
    this.result.scanned++;
    if (this.reader === null || this.result.mismatch !== null || this.ended) return;
    const next = await this.reader.next();
    if (next === null) {
      this.ended = true;
      return;
    }
    this.result.existingLines++;
    const line = this.result.existingLines;
    if (!next.terminated) {
      this.result.mismatch = { offset: next.start, line, message: `entry sidecar line ${line} (byte ${next.start}) has no newline` };
      return;
    }
    const parsed = parseEntry(next.line.toString('utf8'));
    if (typeof parsed === 'string') {
      this.result.mismatch = { offset: next.start, line, message: `entry sidecar line ${line} (byte ${next.start}): ${parsed}` };
      return;
    }
    const diff = same(entry, parsed, corrupt);
    if (diff !== null) {
      this.result.mismatch = { offset: next.start, line, message: `entry sidecar line ${line} (byte ${next.start}) disagrees with the frame at offset ${entry.offset}: ${diff}` };
      return;
    }
    this.result.matched++;
  }

  async finish(): Promise<SidecarComparison> {
    const r = this.result;
    if (this.reader !== null) {
      try {
        if (r.mismatch === null && !this.ended) {
          // Lines left over after the scan's last entry.
          for (;;) {
            const next = await this.reader.next();
            if (next === null) break;
            r.existingLines++;
            r.extraLines++;
            if (r.extraLines === 1) {
              r.mismatch = { offset: next.start, line: r.existingLines, message: `entry sidecar line ${r.existingLines} (byte ${next.start}) indexes a frame past the last valid frame of the log` };
            }
          }
        }
      } finally {
        await this.reader.close();
      }
    }
    r.exact = r.present && r.mismatch === null && r.matched === r.scanned && r.existingLines === r.scanned;
    r.prefix = r.present && r.mismatch === null && r.matched === r.existingLines && r.existingLines > 0;
    return r;
  }
}
