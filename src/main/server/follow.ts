/**
 * Follow over Server-Sent Events (SPEC section 6).
 *
 * One `snapshot` event (the tail page and its cursor), then one `event` per
 * appended logical event, individually, in seq order, with no gap and no
 * duplicate; the SSE `id` is the event's seq, so `Last-Event-ID` resumes at
 * seq + 1 (without a new snapshot).
 *
 * How nothing falls between the snapshot and the live tail: the stream
 * subscribes to the store's durable-append notifications *before* it reads
 * the snapshot (or, on resume, the session's end). From then on a single
 * pump writes events strictly at `next`, the seq the client needs next:
 * live batches are trimmed of what was already sent (de-duplication by seq),
 * and anything missing in front of a batch, or past the last known end, is
 * read from the log with `store.readEvents` in bounded chunks.
 *
 * Appends made by another process reach the stream through the store's
 * file watcher on the session (`store.watch`: fs.watch on the entry
 * sidecar, a slow poll as backstop): each notification makes the stream ask
 * the store for the committed end, and the pump reads up to it.
 *
 * Memory per follower is bounded: live batches waiting to be written are
 * capped at `maxBufferedBytes`; past that the queue is discarded and the
 * pump re-reads those events from the log (the log is canonical, so this
 * is lossless). Writes wait for `drain`, so the socket buffer stays near its
 * high-water mark; a client whose socket does not drain within
 * `stallTimeoutMs` is dropped with a final `error` event and can resume with
 * `Last-Event-ID`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PagerError } from '../../core/errors.js';
import type { SessionEvent } from '../../core/types.js';
import type { CodedPiece } from '../../streams/gzip-members.js';
import { levelFor, type CompressionLevels } from '../page-coding.js';
import type { Store } from '../store-types.js';
import { FollowStream } from './follow-stream.js';
import type { ServerMetrics } from './metrics.js';
import type { ResolvedFollowOptions } from './options.js';
import { negotiate } from './page-encoding.js';
import { SharedLooks } from './shared-looks.js';
import { snapshotEdges, snapshotFrame } from './sse-frames.js';
import { innerPiece, StreamCoder } from './stream-coding.js';

export { parseLastEventId } from './sse-frames.js';

export class FollowHub {
  private readonly streams = new Set<FollowStream>();
  private closing = false;
  /** Looks at the store shared by the streams of one session. */
  readonly shared: SharedLooks;

  constructor(
    readonly store: Store,
    readonly opts: ResolvedFollowOptions,
    readonly metrics: ServerMetrics,
    /** Streams are coded as the client accepts (zstd, gzip) at these levels; undefined: never coded. */
    readonly levels?: CompressionLevels,
  ) {
    this.shared = new SharedLooks(store);
  }

  get size(): number {
    return this.streams.size;
  }

  /** Per-stream buffered bytes (queued live batches + socket buffer), for tests and diagnostics. */
  buffered(): number[] {
    return [...this.streams].map((s) => s.bufferedBytes);
  }

  remove(s: FollowStream): void {
    if (this.streams.delete(s)) this.metrics.followStreams.dec();
    for (const o of this.streams) if (o.sessionId === s.sessionId) return;
    this.shared.drop(s.sessionId);
  }

  /** GET /v1/sessions/:id/follow */
  async handle(request: FastifyRequest, reply: FastifyReply, id: string, maxMessages: number | undefined, lastEventId: number | undefined): Promise<void> {
    if (this.closing) throw new PagerError('overloaded', 'server is shutting down');
    if (this.streams.size >= this.opts.maxStreams) {
      this.metrics.loadShed.inc({ reason: 'follow_streams' });
      throw new PagerError('overloaded', `too many follow streams (${this.streams.size})`);
    }
    let pending: FollowListener | undefined;
    // Subscribe first, so nothing appended from here on can be missed.
    const early: (readonly SessionEvent[])[] = [];
    pending = (events) => early.push(events);
    const unsubscribeLive = this.store.subscribe(id, (events) => pending?.(events));
    // The session's files watched before the snapshot (or the resume's end) is read: anything
    // another process appends from here on is notified, and what it appended before is in that
    // read. The stream then needs no look of its own after its snapshot: that look, the store's
    // view of the session again (three stats on the main thread), was half of an attach's
    // stats at 256 followers (docs/benchmarks.md, rel fourteenth session).
    let changedEarly = false;
    let changed: () => void = () => (changedEarly = true);
    const unwatch = this.store.watch(id, () => changed());
    const unsubscribe = () => {
      unsubscribeLive();
      unwatch();
    };
    let first: Buffer[];
    let next: number;
    let knownEnd: number;
    // The stream's coding: zstd or gzip as negotiated (stream-coding.ts: brotli streams go out uncoded).
    const negotiated = this.levels === undefined ? null : negotiate(request.headers['accept-encoding']);
    const encoding = negotiated === 'br' ? null : negotiated;
    // Events are small: each piece at the configured level, the page as the page path coded it.
    const coder = encoding === null ? null : new StreamCoder(encoding, levelFor(encoding, 0, this.levels as CompressionLevels));
    let firstCoded: { before: Buffer; page: CodedPiece; after: Buffer } | undefined;
    try {
      if (lastEventId !== undefined) {
        const info = await this.store.info(id);
        if (info.status === 'repair_required') throw new PagerError('repair_required', `session ${id} needs repair: ${info.reasons.join('; ')}`, { reasons: info.reasons });
        if (lastEventId > info.lastSeq) throw new PagerError('invalid_request', `Last-Event-ID ${lastEventId} is past the session's last seq ${info.lastSeq}`, { param: 'Last-Event-ID' });
        next = lastEventId + 1;
        knownEnd = info.nextSeq;
        first = [];
      } else {
        const pb = await this.store.pageBuffer(id, maxMessages === undefined ? {} : { maxMessages }, request.signal, encoding === null ? undefined : { encoding, levels: this.levels as CompressionLevels });
        next = pb.throughSeq + 1;
        knownEnd = next;
        // The page goes into the stream as it is (identity) or as the page path coded it: the frame's edges around it.
        const edges = snapshotEdges(pb.throughSeq, pb.body);
        first = edges === null ? [snapshotFrame(pb.throughSeq, pb.body)] : [edges.before, pb.body, edges.after];
        const inner = coder === null || edges === null || pb.encoded?.encoding !== encoding ? null : innerPiece(pb.encoded.body, coder.encoding, pb.body.length);
        if (edges !== null && inner !== null) firstCoded = { ...edges, page: inner };
        this.metrics.observePage('/v1/sessions/:id/follow', pb);
        if (request.pager) request.pager.page = { fromSeq: pb.fromSeq, toSeq: pb.toSeq, events: pb.toSeq - pb.fromSeq, bytes: pb.body.length, frames: pb.frames };
      }
    } catch (err) {
      unsubscribe();
      throw err;
    }
    if (this.closing) {
      unsubscribe();
      throw new PagerError('overloaded', 'server is shutting down');
    }
    if (reply.raw.destroyed || request.raw.socket?.destroyed === true) {
      unsubscribe(); // the client is gone; nothing to answer
      return;
    }

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      'x-request-id': String(request.id),
      ...(this.levels === undefined ? {} : { vary: 'Accept-Encoding' }),
      ...(coder === null ? {} : { 'content-encoding': coder.encoding }),
    });
    const stream = new FollowStream(this, request, res, id, next, knownEnd, coder);
    stream.unsubscribe = unsubscribe;
    changed = stream.onChange;
    this.streams.add(stream);
    this.metrics.followStreams.inc();
    if (request.pager) request.pager.streaming = true;
    pending = stream.onLive;
    for (const events of early) stream.onLive(events);
    stream.start(first, firstCoded, changedEarly);
    this.metrics.httpDuration.observe({ method: 'GET', route: '/v1/sessions/:id/follow', status_code: '200' }, reply.elapsedTime / 1000);
  }

  /** End every stream (shutdown): a final `end` event, then close; resolves when all are closed. */
  async closeAll(): Promise<void> {
    this.closing = true;
    const all = [...this.streams];
    for (const s of all) s.end('shutdown');
    await Promise.all(all.map((s) => s.done));
  }
}

type FollowListener = (events: readonly SessionEvent[]) => void;
