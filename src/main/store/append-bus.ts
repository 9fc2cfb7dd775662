/**
 * How processes tell each other of durable appends (follow across processes
 * and hosts over shared storage): after each durable append, the writer's
 * process publishes `{session, nextSeq}` (and, from a store that can say
 * where that append is, `at`: an S3 store's manifest number, so a reader
 * fetches that manifest at once instead of listing for it); every process's followers of that
 * session then read the new frames from storage by seq, as they do for any
 * notification. A message only says "look again, there is at least this
 * much": it carries no event, so a lost, late, duplicated or forged message
 * can cost latency, never an event or a duplicate (the backstop poll of
 * `store.watch` covers a lost one).
 *
 * The transport is a bus (Redis pub/sub in redis-bus.ts; tests may give
 * another). This file holds the interface and the message format.
 */
import { isValidSessionId } from '../../storage/layout.js';
import { PagerError } from '../../core/errors.js';

/** A bus listener: a message's `nextSeq`, or `undefined` when messages may have been lost (a reconnection) and every session is to be looked at again. */
export type BusListener = (nextSeq: number | undefined, at?: string) => void;

export interface AppendBus {
  /** Tell other processes that `id` has `nextSeq` durable events. Never throws, never waits: a lost message is a delay. */
  publish(id: string, nextSeq: number, at?: string): void;
  /** Hear of `id`'s appends by other processes (and this one's own: callers drop echoes). Returns the function that stops it. */
  subscribe(id: string, listener: BusListener): () => void;
  /** What the bus has done so far (the store's stats). */
  stats(): AppendBusStats;
  close(): Promise<void>;
}

export interface AppendBusStats {
  kind: string;
  connected: boolean;
  published: number;
  received: number;
  /** Messages dropped as malformed (not `{session, nextSeq}` for their channel). */
  rejected: number;
}

export interface AppendMessage {
  session: string;
  nextSeq: number;
  /** Where the append is in the writer's storage (StorageBackend.changeMark), when it can say. */
  at?: string;
}

const AT_RE = /^[A-Za-z0-9._:-]{1,64}$/;

export function encodeAppendMessage(session: string, nextSeq: number, at?: string): string {
  return JSON.stringify(at === undefined ? { session, nextSeq } : { session, nextSeq, at });
}

/**
 * A message read off the bus, or null when it is not exactly
 * `{"session": <a session id>, "nextSeq": <non-negative safe integer>}`,
 * optionally with `"at": <1-64 of A-Z a-z 0-9 . _ : ->` (anyone with access
 * to the bus can publish; such a message is dropped).
 */
export function decodeAppendMessage(text: string): AppendMessage | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const keys = Object.keys(v);
  const { session, nextSeq, at } = v as Record<string, unknown>;
  if (keys.length !== (at === undefined ? 2 : 3)) return null;
  if (!isValidSessionId(session)) return null;
  if (typeof nextSeq !== 'number' || !Number.isSafeInteger(nextSeq) || nextSeq < 0) return null;
  if (at === undefined) return { session, nextSeq };
  if (typeof at !== 'string' || !AT_RE.test(at)) return null;
  return { session, nextSeq, at };
}

/** `redis://` or `rediss://` URL, else `invalid_request` naming what is wrong. */
export function checkRedisUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new PagerError('invalid_request', `redis URL ${JSON.stringify(url)} is not a URL (redis://host:port)`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new PagerError('invalid_request', `redis URL must start with redis:// or rediss://, got ${JSON.stringify(url)}`);
  if (u.hostname === '') throw new PagerError('invalid_request', `redis URL ${JSON.stringify(url)} names no host`);
  return url;
}
