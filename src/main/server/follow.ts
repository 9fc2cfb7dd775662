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
import type { ServerResponse } from 'node:http';
import { PagerError } from '../../core/errors.js';
import { settled } from '../event-follow.js';
import type { SessionEvent } from '../../core/types.js';
import type { Store } from '../store-types.js';
import { toPagerError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import type { ResolvedFollowOptions } from './options.js';
import { levelFor, type CompressionLevels } from '../page-coding.js';
import { negotiate } from './page-encoding.js';
import { innerPiece, StreamCoder } from './stream-coding.js';
import type { CodedPiece } from '../../streams/gzip-members.js';

/** Live batches are serialized once, however many followers they go to. */
const frameCache = new WeakMap<readonly SessionEvent[], Buffer[]>();

export function eventFrame(e: SessionEvent): Buffer {
  return Buffer.from(`id: ${e.seq}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`, 'utf8');
}

function framesOf(events: readonly SessionEvent[]): Buffer[] {
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
function snapshotEdges(throughSeq: number, page: Buffer): { before: Buffer; after: Buffer } | null {
  if (page.indexOf(0x0a) !== -1 || page.indexOf(0x0d) !== -1) return null;
  return { before: Buffer.from(`id: ${throughSeq}\nevent: snapshot\ndata: {"cursor":${throughSeq},"page":`), after: Buffer.from('}\n\n') };
}

export function snapshotFrame(throughSeq: number, page: Buffer): Buffer {
  const json = Buffer.concat([Buffer.from(`{"cursor":${throughSeq},"page":`), page, Buffer.from('}')]);
  return Buffer.concat([Buffer.from(`id: ${throughSeq}\nevent: snapshot\n`), dataLines(json), Buffer.from('\n')]);
}

function errorFrame(code: string, message: string, extra: Record<string, unknown> = {}): string {
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

const WRITE_GROUP_BYTES = 64 * 1024;

interface Batch {
  events: readonly SessionEvent[];
  bytes: number;
}

export type EndReason = 'client' | 'stalled' | 'shutdown' | 'error';

class FollowStream {
  private next: number;
  private knownEnd: number;
  private queue: Batch[] = [];
  private queuedBytes = 0;
  private closed = false;
  private wake: (() => void) | undefined;
  private waitingDrain = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private checking = false;
  private recheck = false;
  private settleTries = 0;
  private settleTimer: NodeJS.Timeout | undefined;
  private unwatch: () => void = () => undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private sent = 0;
  private bytes = 0;
  private readonly started = Date.now();
  private endReason: EndReason = 'client';
  /** Resolves when the response is closed. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  unsubscribe: () => void = () => undefined;

  constructor(
    private readonly hub: FollowHub,
    private readonly request: FastifyRequest,
    private readonly res: ServerResponse,
    readonly sessionId: string,
    next: number,
    knownEnd: number,
    /** The response's content coding (stream-coding.ts); null: identity. */
    private readonly coder: StreamCoder | null = null,
  ) {
    this.next = next;
    this.knownEnd = knownEnd;
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  /** Bytes held for this client: queued live batches plus the socket's buffer. */
  get bufferedBytes(): number {
    return this.queuedBytes + this.res.writableLength;
  }

  /** Store notification: a durable batch. Never blocks, never throws. */
  onLive = (events: readonly SessionEvent[]): void => {
    if (this.closed || events.length === 0) return;
    const last = events[events.length - 1] as SessionEvent;
    if (last.seq + 1 > this.knownEnd) this.knownEnd = last.seq + 1;
    if (last.seq < this.next) return;
    const frames = framesOf(events);
    let bytes = 0;
    for (const f of frames) bytes += f.length;
    if (this.queuedBytes + bytes > this.hub.opts.maxBufferedBytes) {
      // Too much waiting for a slow client: drop the queue, the pump re-reads
      // those events from the log when the client catches up (lossless).
      this.queue = [];
      this.queuedBytes = 0;
      this.hub.metrics.followRereads.inc();
    } else {
      this.queue.push({ events, bytes });
      this.queuedBytes += bytes;
    }
    this.kick();
  };

  private kick(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /**
   * `first`: the snapshot frame in pieces (its edges around the page's own
   * bytes; nothing on resume), written as they are: copying a ~160 KiB page
   * into one frame took most of an attach's main-thread time at 256
   * connections (docs/benchmarks.md); `coded`: the same frame as its edges
   * around its page coded already, when the page came coded.
   */
  start(first: readonly Buffer[], coded?: { before: Buffer; page: CodedPiece; after: Buffer }): void {
    const res = this.res;
    res.on('close', () => this.onClose());
    this.request.raw.socket?.setNoDelay(true);
    const retry = Buffer.from(`retry: ${this.hub.opts.retryMs}\n\n`);
    const c = this.coder;
    let size = retry.length;
    for (const piece of first) size += piece.length;
    // In the order they are sent: a stream's coding is one sequence of pieces.
    if (coded !== undefined && c !== null) this.send(Buffer.concat([c.code(Buffer.concat([retry, coded.before])), c.coded(coded.page), c.code(coded.after)]), size);
    else if (c !== null) this.rawWrite(Buffer.concat([retry, ...first], size));
    else {
      // One writev on the socket, no copy of the page.
      res.cork();
      this.rawWrite(retry);
      for (const piece of first) this.rawWrite(piece);
      res.uncork();
    }
    const o = this.hub.opts;
    this.heartbeat = setInterval(() => {
      if (!this.closed && !this.waitingDrain) this.rawWrite(': heartbeat\n\n');
    }, o.heartbeatMs);
    this.heartbeat.unref();
    this.unwatch = this.hub.store.watch(this.sessionId, () => {
      this.hub.shared.changed(this.sessionId);
      void this.checkEnd();
    });
    // Whatever another process appended between the snapshot and the watch: a look of its own.
    this.hub.shared.changed(this.sessionId, true);
    void this.checkEnd();
    void this.pump();
  }

  /**
   * Learn the committed end from the store (the session's files changed:
   * maybe another process appended). Notifications during a check make one
   * more check after it. A failed look is tried again a few times shortly
   * after (another process may be between its entry line and its metadata),
   * then waits for the next notification; the pump reports real failures.
   */
  private async checkEnd(): Promise<void> {
    if (this.closed) return;
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = true;
    try {
      do {
        this.recheck = false;
        try {
          const nextSeq = await this.hub.shared.nextSeq(this.sessionId);
          this.settleTries = 0;
          if (nextSeq > this.knownEnd) {
            this.knownEnd = nextSeq;
            this.kick();
          }
        } catch {
          if (++this.settleTries <= 4 && this.settleTimer === undefined) {
            this.settleTimer = setTimeout(() => {
              this.settleTimer = undefined;
              void this.checkEnd();
            }, 25);
            this.settleTimer.unref();
          }
        }
      } while (this.recheck && !this.closed);
    } finally {
      this.checking = false;
    }
  }

  private rawWrite(chunk: Buffer | string): boolean {
    const n = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    return this.send(this.coder === null ? chunk : this.coder.code(chunk), n);
  }

  /** Bytes for the wire (coded when the stream is), standing for `identityBytes` of the stream. */
  private send(wire: Buffer | string, identityBytes: number): boolean {
    this.bytes += identityBytes;
    this.hub.metrics.bytesOut.inc({ route: '/v1/sessions/:id/follow' }, typeof wire === 'string' ? Buffer.byteLength(wire) : wire.length);
    return this.res.write(wire);
  }

  private async write(chunk: Buffer): Promise<void> {
    if (this.closed) return;
    if (!this.rawWrite(chunk)) await this.drained();
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      this.waitingDrain = true;
      const done = () => {
        clearTimeout(timer);
        this.res.off('drain', done);
        this.res.off('close', done);
        this.waitingDrain = false;
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        this.end('stalled');
      }, this.hub.opts.stallTimeoutMs);
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Write events (already checked to start at `next`) in groups of about 64 KiB. */
  private async writeEvents(frames: readonly Buffer[], from: number, to: number): Promise<void> {
    let group: Buffer[] = [];
    let size = 0;
    for (let i = from; i < to && !this.closed; i++) {
      const f = frames[i] as Buffer;
      group.push(f);
      size += f.length;
      if (size >= WRITE_GROUP_BYTES || i === to - 1) {
        const n = group.length;
        const chunk = n === 1 ? (group[0] as Buffer) : Buffer.concat(group, size);
        group = [];
        size = 0;
        // `next` moves before the write: once handed to the socket, an event is sent.
        this.next += n;
        this.sent += n;
        this.hub.metrics.followEvents.inc(n);
        await this.write(chunk);
      }
    }
  }

  /** Read [next, to) from the log and send it. Stops early if the log has less. */
  private async catchUp(to: number): Promise<void> {
    const chunk = this.hub.opts.catchUpChunk;
    while (!this.closed && this.next < to) {
      const from = this.next;
      // A look while another process appends may catch its files mid-way: tried again shortly before it ends the stream.
      const events = await settled(() => this.hub.shared.readEvents(this.sessionId, from, Math.min(to, from + chunk)), () => this.closed);
      if (this.closed) return;
      if (events.length === 0) {
        // The log does not have them (yet): believe the log.
        if (this.knownEnd > from) this.knownEnd = from;
        return;
      }
      for (let i = 0; i < events.length; i++) {
        if ((events[i] as SessionEvent).seq !== from + i) throw new PagerError('internal', `read seq ${(events[i] as SessionEvent).seq} where ${from + i} was expected`);
      }
      // Serialized once for every stream that read this very range (the read is shared).
      await this.writeEvents(framesOf(events), 0, events.length);
    }
  }

  private async pump(): Promise<void> {
    try {
      while (!this.closed) {
        const b = this.queue.shift();
        if (b !== undefined) {
          this.queuedBytes -= b.bytes;
          const first = (b.events[0] as SessionEvent).seq;
          const end = first + b.events.length;
          if (end <= this.next) continue; // already sent (snapshot or catch-up)
          if (first > this.next) {
            await this.catchUp(first); // a gap in front of the batch: read it
            if (this.closed) return;
            if (this.next < first) throw new PagerError('internal', `events ${this.next}..${first - 1} could not be read`);
          }
          await this.writeEvents(framesOf(b.events), this.next - first, b.events.length);
          continue;
        }
        if (this.knownEnd > this.next) {
          await this.catchUp(this.knownEnd);
          continue;
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } catch (err) {
      if (this.closed) return;
      const pe = toPagerError(err);
      this.request.log.warn({ sessionId: this.sessionId, code: pe.code, message: pe.message }, 'follow stream failed');
      this.hub.metrics.errors.inc({ code: pe.code });
      this.end('error', errorFrame(pe.code, pe.message, { lastEventId: this.next - 1 }));
    }
  }

  /** End the stream from the server side, with a last event; destroy it if the client does not read it. */
  end(reason: EndReason, last?: string): void {
    if (this.closed || this.res.writableEnded) return;
    this.endReason = reason;
    let frame = last;
    if (frame === undefined) {
      frame =
        reason === 'shutdown'
          ? `event: end\ndata: ${JSON.stringify({ reason: 'shutdown', lastEventId: this.next - 1 })}\n\n`
          : errorFrame('overloaded', 'the client is not reading fast enough; reconnect with Last-Event-ID', { lastEventId: this.next - 1, retryAfter: 1 });
    }
    if (reason !== 'error') this.hub.metrics.followDropped.inc({ reason });
    // A coded stream ends with its coding's end (gzip: the trailer), so the client sees a whole body.
    this.res.end(this.coder === null ? frame : Buffer.concat([this.coder.code(frame), this.coder.finish()]));
    this.graceTimer = setTimeout(() => this.res.destroy(), this.hub.opts.endGraceMs);
    this.graceTimer.unref();
    this.closed = true;
    this.kick();
  }

  private onClose(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.settleTimer);
    this.unwatch();
    clearTimeout(this.graceTimer);
    this.unsubscribe();
    this.queue = [];
    this.queuedBytes = 0;
    this.kick();
    this.hub.remove(this);
    this.request.log.info(
      { sessionId: this.sessionId, reason: this.endReason, eventsSent: this.sent, bytes: this.bytes, durationMs: Date.now() - this.started, lastEventId: this.next - 1 },
      'follow stream closed',
    );
    this.resolveDone();
  }
}

/**
 * The looks followers of one session take at the store, shared between
 * them. Appends by another process reach every stream of the session as one
 * change notification each; each stream then asked the store for the
 * session's end and read the new events itself, so 200 followers made 200
 * stats, opens and reads of the same bytes per append (follow delay p99
 * 0.3-1.3 s at 100 appends/s, docs/benchmarks.md). Now a look (the end, or
 * one range of events) is taken once and its answer given to every stream
 * that asks the same while nothing has changed since: a change notification
 * starts a new generation (once per notification, however many streams it
 * reaches: they are called one after another in one synchronous run), and a
 * look of an older generation is never handed out, so no stream misses an
 * append it was told of. Failed looks are not kept (the callers retry);
 * of the ranges read, the last few are kept.
 */
/** Ranges of events kept per session and generation (streams at a few positions share them). */
const SHARED_READS_KEPT = 8;

export class SharedLooks {
  private readonly sessions = new Map<string, { gen: number; bumped: boolean; end?: Promise<number>; reads: Map<string, Promise<SessionEvent[]>> }>();

  constructor(private readonly store: Store) {}

  private of(id: string) {
    let s = this.sessions.get(id);
    if (s === undefined) {
      s = { gen: 0, bumped: false, reads: new Map() };
      this.sessions.set(id, s);
    }
    return s;
  }

  /**
   * The session may have changed: looks taken before are stale. Every stream
   * a notification reaches calls this; only the first of one synchronous run
   * starts a generation (`always`: a new stream's own first look).
   */
  changed(id: string, always = false): void {
    const s = this.of(id);
    if (s.bumped && !always) return;
    s.gen++;
    s.end = undefined;
    s.reads.clear();
    s.bumped = true;
    queueMicrotask(() => (s.bumped = false));
  }

  /** Forget a session no stream follows any more. */
  drop(id: string): void {
    this.sessions.delete(id);
  }

  private keep<T>(s: { gen: number }, p: Promise<T>, clear: () => void): Promise<T> {
    const gen = s.gen;
    p.catch(() => {
      if (s.gen === gen) clear();
    });
    return p;
  }

  nextSeq(id: string): Promise<number> {
    const s = this.of(id);
    if (s.end === undefined) {
      const p = this.store.nextSeq(id);
      s.end = p;
      this.keep(s, p, () => {
        if (s.end === p) s.end = undefined;
      });
    }
    return s.end;
  }

  readEvents(id: string, from: number, to: number): Promise<SessionEvent[]> {
    const s = this.of(id);
    const key = `${from}:${to}`;
    let p = s.reads.get(key);
    if (p === undefined) {
      const q = this.store.readEvents(id, from, to);
      p = q;
      s.reads.set(key, q);
      // A stream catching up alone reads chunk after chunk in one generation: keep the last few only.
      if (s.reads.size > SHARED_READS_KEPT) s.reads.delete(s.reads.keys().next().value as string);
      this.keep(s, q, () => {
        if (s.reads.get(key) === q) s.reads.delete(key);
      });
    }
    return p;
  }
}

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
    if (this.streams.size >= this.opts.maxStreams) throw new PagerError('overloaded', `too many follow streams (${this.streams.size})`);
    let pending: FollowListener | undefined;
    // Subscribe first, so nothing appended from here on can be missed.
    const early: (readonly SessionEvent[])[] = [];
    pending = (events) => early.push(events);
    const unsubscribe = this.store.subscribe(id, (events) => pending?.(events));
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
    this.streams.add(stream);
    this.metrics.followStreams.inc();
    if (request.pager) request.pager.streaming = true;
    pending = stream.onLive;
    for (const events of early) stream.onLive(events);
    stream.start(first, firstCoded);
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
