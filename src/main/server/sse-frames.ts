/**
 * The Server-Sent Events frames of a follow stream (SPEC section 6): one
 * `event` frame per logical event (`id` its seq), the `snapshot` frame
 * around the tail page, `error` frames, and `Last-Event-ID` parsed. Pure:
 * values in, bytes out.
 */
import { PagerError } from '../../core/errors.js';
import type { SessionEvent } from '../../core/types.js';

/** Live batches are serialized once, however many followers they go to. */
const frameCache = new WeakMap<readonly SessionEvent[], Buffer[]>();

export function eventFrame(e: SessionEvent): Buffer {
  return Buffer.from(`id: ${e.seq}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`, 'utf8');
}

export function framesOf(events: readonly SessionEvent[]): Buffer[] {
  let frames = frameCache.get(events);
  if (frames === undefined) {
    frames = events.map(eventFrame);
    frameCache.set(events, frames);
  }
  return frames;
}

/** `data:` lines for a JSON body; compact JSON has no raw line breaks, but do not rely on it. */
function dataLines(body: Buffer): Buffer {
  if (body.indexOf(0x0a) === -1 && body.indexOf(0x0d) === -1) return Buffer.concat([Buffer.from('data: '), body, Buffer.from('\n')]);
  const text = body.toString('utf8');
  return Buffer.from(
    text
      .split(/\r\n|\r|\n/)
      .map((l) => `data: ${l}\n`)
      .join(''),
    'utf8',
  );
}

/**
 * The snapshot frame around its page, when the page's bytes go into it
 * untouched (compact JSON: no line break), so a page coded already can be
 * sent between the two; null otherwise.
 */
export function snapshotEdges(throughSeq: number, page: Buffer): { before: Buffer; after: Buffer } | null {
  if (page.indexOf(0x0a) !== -1 || page.indexOf(0x0d) !== -1) return null;
  return { before: Buffer.from(`id: ${throughSeq}\nevent: snapshot\ndata: {"cursor":${throughSeq},"page":`), after: Buffer.from('}\n\n') };
}

export function snapshotFrame(throughSeq: number, page: Buffer): Buffer {
  const json = Buffer.concat([Buffer.from(`{"cursor":${throughSeq},"page":`), page, Buffer.from('}')]);
  return Buffer.concat([Buffer.from(`id: ${throughSeq}\nevent: snapshot\n`), dataLines(json), Buffer.from('\n')]);
}

export function errorFrame(code: string, message: string, extra: Record<string, unknown> = {}): string {
  return `event: error\ndata: ${JSON.stringify({ error: { code, message, ...extra } })}\n\n`;
}

/** Parse a `Last-Event-ID`: a seq, or -1 (the cursor of an empty session). */
export function parseLastEventId(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  const s = Array.isArray(raw) ? raw[0] : raw;
  if (typeof s !== 'string' || !/^(-1|0|[1-9][0-9]{0,15})$/.test(s.trim())) {
    throw new PagerError('invalid_request', 'Last-Event-ID must be an event seq (a non-negative integer) or -1', { param: 'Last-Event-ID' });
  }
  const n = Number(s.trim());
  if (!Number.isSafeInteger(n)) throw new PagerError('invalid_request', 'Last-Event-ID is out of range', { param: 'Last-Event-ID' });
  return n;
}
