/**
 * The append bus on Redis pub/sub (`--redis redis://host:port`): one
 * channel per session, `<prefix><id>`, carrying `{session, nextSeq}`
 * (append-bus.ts). Two connections, as Redis wants: one that publishes and
 * one that only subscribes (a subscribed connection can do nothing else).
 *
 * Redis pub/sub delivers at most once: a message published while a
 * subscriber is disconnected is gone. So every (re)connection of the
 * subscriber tells every listener "look again" (`undefined`), and publishing
 * never queues or waits: while Redis is away a publish is dropped at once,
 * the append it reports is durable already, and followers elsewhere learn
 * of it from the next message, a reconnection or their backstop poll.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { checkRedisUrl, decodeAppendMessage, encodeAppendMessage, type AppendBus, type AppendBusStats, type BusListener } from './append-bus.js';

export { checkRedisUrl } from './append-bus.js';

export const DEFAULT_REDIS_PREFIX = 'session-pager:append:';

export interface RedisBusOptions {
  /** Channel name prefix (default `session-pager:append:`): stores over different storage may share one Redis. */
  prefix?: string;
  /** Told of connection errors (at most one per disconnection), for the server's log. */
  onError?: (err: Error) => void;
}

/** Reconnect after 50 ms, doubling up to 2 s: a restarted Redis is found again within about 2 s. */
const retryStrategy = (times: number): number => Math.min(50 * 2 ** Math.min(times, 6), 2_000);

/** How long close() waits for publishes under way. */
const CLOSE_FLUSH_MS = 1_000;

export class RedisAppendBus implements AppendBus {
  readonly kind = 'redis';
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly prefix: string;
  private readonly listeners = new Map<string, Set<BusListener>>();
  private published = 0;
  private received = 0;
  private rejected = 0;
  private reported = false;
  private closed = false;
  /** Publishes under way: close() lets them finish (a clean shutdown's last append is still heard of). */
  private readonly pending = new Set<Promise<unknown>>();

  constructor(url: string, private readonly opts: RedisBusOptions = {}) {
    checkRedisUrl(url);
    this.prefix = opts.prefix ?? DEFAULT_REDIS_PREFIX;
    const common: RedisOptions = { retryStrategy, connectTimeout: 5_000, lazyConnect: false };
    // Publishes fail at once while disconnected (never queued behind a reconnection).
    this.pub = new Redis(url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    // Subscriptions made while disconnected wait for the connection; ioredis subscribes again after each reconnection.
    this.sub = new Redis(url, { ...common, enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: true });
    for (const c of [this.pub, this.sub]) {
      c.on('error', (err: Error) => this.report(err));
      c.on('ready', () => (this.reported = false));
    }
    this.sub.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    // Whatever was published while this connection was away is lost: everyone looks again.
    this.sub.on('ready', () => {
      for (const set of this.listeners.values()) for (const fn of [...set]) call(fn, undefined);
    });
  }

  publish(id: string, nextSeq: number, at?: string): void {
    if (this.closed) return;
    const p = this.pub.publish(this.prefix + id, encodeAppendMessage(id, nextSeq, at)).then(
      () => void this.published++,
      () => undefined, // Redis away: the message is lost, the append is durable; followers catch up later.
    );
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  subscribe(id: string, listener: BusListener): () => void {
    if (this.closed) return () => undefined;
    let set = this.listeners.get(id);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(id, set);
      this.sub.subscribe(this.prefix + id).catch((err: Error) => this.report(err));
    }
    set.add(listener);
    const own = set;
    return () => {
      if (!own.delete(listener) || own.size > 0 || this.listeners.get(id) !== own) return;
      this.listeners.delete(id);
      if (!this.closed) this.sub.unsubscribe(this.prefix + id).catch(() => undefined);
    };
  }

  stats(): AppendBusStats {
    return { kind: this.kind, connected: this.pub.status === 'ready' && this.sub.status === 'ready', published: this.published, received: this.received, rejected: this.rejected };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    if (this.pending.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.pending]), new Promise((r) => (timer = setTimeout(r, CLOSE_FLUSH_MS)))]);
      clearTimeout(timer);
    }
    this.pub.disconnect();
    this.sub.disconnect();
  }

  private onMessage(channel: string, message: string): void {
    if (!channel.startsWith(this.prefix)) return;
    const id = channel.slice(this.prefix.length);
    const m = decodeAppendMessage(message);
    if (m === null || m.session !== id) {
      this.rejected++;
      return;
    }
    this.received++;
    for (const fn of [...(this.listeners.get(id) ?? [])]) call(fn, m.nextSeq, m.at);
  }

  private report(err: Error): void {
    if (this.reported || this.closed) return;
    this.reported = true;
    try {
      this.opts.onError?.(err);
    } catch {
      // The log's failure is not the bus's.
    }
  }
}

function call(fn: BusListener, nextSeq: number | undefined, at?: string): void {
  try {
    fn(nextSeq, at);
  } catch {
    // One listener's failure does not concern the others.
  }
}
