/**
 * One follower's stream (follow.ts opens it): live batches queued up to a
 * bound, a single pump writing strictly at `next`, gaps and anything past
 * the last known end read from the log, writes paced by `drain`, a stalled
 * client dropped with a last `error` frame.
 */
import type { FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { PagerError } from '../../core/errors.js';
import type { SessionEvent } from '../../core/types.js';
import type { CodedPiece } from '../../streams/gzip-members.js';
import { settled } from '../event-follow.js';
import type { Store } from '../store-types.js';
import { toPagerError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import type { ResolvedFollowOptions } from './options.js';
import type { SharedLooks } from './shared-looks.js';
import { errorFrame, framesOf } from './sse-frames.js';
import type { StreamCoder } from './stream-coding.js';

/** What a stream needs of the hub that holds it. */
export interface StreamHost {
  readonly store: Store;
  readonly opts: ResolvedFollowOptions;
  readonly metrics: ServerMetrics;
  readonly shared: SharedLooks;
  remove(s: FollowStream): void;
}

const WRITE_GROUP_BYTES = 64 * 1024;

interface Batch {
  events: readonly SessionEvent[];
  bytes: number;
}

export type EndReason = 'client' | 'stalled' | 'shutdown' | 'error';

export class FollowStream {
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
    private readonly hub: StreamHost,
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

  /** The session's files changed (store.watch, set up by follow.ts): maybe another process appended. */
  onChange = (): void => {
    if (this.closed) return;
    this.hub.shared.changed(this.sessionId);
    void this.checkEnd();
  };

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
  start(first: readonly Buffer[], coded?: { before: Buffer; page: CodedPiece; after: Buffer }, changedEarly = false): void {
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
    // The session's files are watched from before the snapshot (follow.ts): a change notified
    // since it was read is looked at now (a look of its own: the shared one may be older).
    if (changedEarly) {
      this.hub.shared.changed(this.sessionId, true);
      void this.checkEnd();
    }
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
