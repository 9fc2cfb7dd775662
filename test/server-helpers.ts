/**
 * Shared pieces of the HTTP tests: temp stores, synthetic events, a raw
 * Server-Sent-Events client (node:http, so a test can stop reading and
 * watch backpressure), and small HTTP helpers.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionEvent } from '../src/core/types.js';
import { openStore } from '../src/main/store.js';
import type { Store } from '../src/main/store-types.js';

export const T0 = 1_700_000_000_000;

/**
 * Events seq from..from+n-1, by seq % 10: a user message, seven packable
 * text deltas, an assistant message, and an unknown event type with extra keys.
 */
export function makeEvents(from: number, n: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (let seq = from; seq < from + n; seq++) {
    const k = seq % 10;
    const time = T0 + seq * 7;
    const turn = Math.floor(seq / 10);
    if (k === 0) out.push({ type: 'user/message', seq, time, data: { content: [{ type: 'text', text: `question ${seq}` }] } });
    else if (k <= 7) out.push({ type: 'assistant/chunk', seq, time, data: { turn, step: 0, chunk: { type: 'text-delta', index: 0, text: `tok${seq} ` } } });
    else if (k === 8) out.push({ type: 'assistant/message', seq, time, data: { content: [{ type: 'text', text: `answer ${turn}` }] } });
    else out.push({ type: 'custom/note', seq, time, data: { n: seq, text: 'x'.repeat(seq % 50) }, extra: { kept: true } });
  }
  return out;
}

export interface TempStore {
  dir: string;
  store: Store;
  cleanup(): Promise<void>;
}

export async function tempStore(workers = 1): Promise<TempStore> {
  const dir = await mkdtemp(join(tmpdir(), 'sp-server-'));
  const store = await openStore({ dataDir: dir, workers });
  let closed = false;
  return {
    dir,
    store,
    cleanup: async () => {
      if (!closed) {
        closed = true;
        await store.close().catch(() => undefined);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Create `id` and append `n` events in batches of `batch`. */
export async function seedSession(store: Store, id: string, n: number, batch = 500): Promise<void> {
  await store.create(id, { title: `session ${id}` });
  for (let at = 0; at < n; at += batch) await store.append(id, makeEvents(at, Math.min(batch, n - at)));
}

/**
 * `store` whose pages are held: every pageBuffer call is counted (`entered`), then waits for
 * the promise `gate()` gives at that moment before the store builds the page (a page that
 * takes as long as a test needs, so admission and shedding can be watched while it holds its
 * slot). Everything else goes to the store as it is.
 */
export function gatedPages(store: Store, gate: () => Promise<void>): { store: Store; entered: () => number } {
  let entered = 0;
  const gated: Store = new Proxy(store, {
    get(target, prop) {
      if (prop === 'pageBuffer') {
        return async (...args: Parameters<Store['pageBuffer']>) => {
          entered++;
          await gate();
          return target.pageBuffer(...args);
        };
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: gated, entered: () => entered };
}

/** Keep the event loop busy until this process has used `ms` of CPU (however long a starved machine makes that). */
export function burnCpu(ms: number): void {
  const t0 = process.cpuUsage();
  for (let d = process.cpuUsage(t0); (d.user + d.system) / 1000 < ms; d = process.cpuUsage(t0)) {
    // a loop busy with its own work
  }
}

/** A sample's value from /metrics text (a series without labels, or with the labels given as written). */
export function metricSample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000, stepMs = 10): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(stepMs);
  }
}

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export interface SseClient {
  res: IncomingMessage;
  req: ClientRequest;
  status: number;
  events: SseEvent[];
  comments: string[];
  /** Raw bytes received. */
  received: number;
  ended: Promise<void>;
  isEnded(): boolean;
  pause(): void;
  resume(): void;
  close(): void;
  /** Resolves when `pred` holds for the events received so far. */
  waitFor(what: string, pred: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
}

/** Open an SSE stream; resolves once the response head arrived (any status). */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { accept: 'text/event-stream', ...headers } });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let buf = '';
      let cur: { id?: string; event?: string; data: string[] } = { data: [] };
      let ended = false;
      let resolveEnded!: () => void;
      const endedP = new Promise<void>((r) => (resolveEnded = r));
      const client: SseClient = {
        res,
        req,
        status: res.statusCode ?? 0,
        events,
        comments,
        received: 0,
        ended: endedP,
        isEnded: () => ended,
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => {
          req.destroy();
          res.destroy();
        },
        waitFor: async (what, pred, timeoutMs = 15_000) => {
          await until(
            what,
            () => {
              if (pred(events)) return true;
              if (ended) throw new Error(`stream ended before ${what}` + (res.statusCode === 200 ? '' : ` (status ${res.statusCode}: ${buf.slice(0, 300)})`));
              return false;
            },
            timeoutMs,
          );
        },
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        client.received += Buffer.byteLength(chunk);
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) !== -1) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (cur.data.length > 0 || cur.event !== undefined) {
              events.push({ id: cur.id, event: cur.event ?? 'message', data: cur.data.join('\n') });
            }
            cur = { data: [] };
            continue;
          }
          if (line.startsWith(':')) {
            comments.push(line.slice(1).trim());
            continue;
          }
          const c = line.indexOf(':');
          const field = c === -1 ? line : line.slice(0, c);
          const value = c === -1 ? '' : line.slice(c + 1).replace(/^ /, '');
          if (field === 'data') cur.data.push(value);
          else if (field === 'event') cur.event = value;
          else if (field === 'id') cur.id = value;
        }
      });
      const finish = () => {
        ended = true;
        resolveEnded();
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      resolve(client);
    });
    req.end();
  });
}

export interface RawResponse {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/**
 * One request with node:http: the body as received (no automatic decompression).
 *
 * A GET or HEAD whose reused keep-alive connection is reset before any answer (ECONNRESET or
 * EPIPE) is sent once more, on a new connection: the server may close an idle keep-alive socket
 * just as the client reuses it, and the request then never reached it; every HTTP client retries
 * an idempotent request so (node's docs: request.reusedSocket). Anything else fails as it came.
 */
export function rawRequest(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<RawResponse> {
  const method = opts.method ?? 'GET';
  const idempotent = /^(GET|HEAD)$/i.test(method);
  const attempt = (mayRetry: boolean): Promise<RawResponse> =>
    new Promise((resolve, reject) => {
      let answered = false;
      const req = httpRequest(url, { method, headers: opts.headers ?? {} }, (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        const stale = req.reusedSocket && !answered && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        if (mayRetry && idempotent && stale) resolve(attempt(false));
        else reject(err);
      });
      req.end(opts.body);
    });
  return attempt(true);
}
