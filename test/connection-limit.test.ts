/**
 * The connection limit (issue 15: past capacity, no error other than shedding 503s;
 * server/connection-limit.ts). Node's own `maxConnections` closed a connection past it without
 * a word, and the client saw ECONNRESET; the server now keeps the limit itself: a connection past
 * it gets a complete `503 overloaded` with Retry-After and the SPEC's error body, then the
 * connection is closed (cleanly: no reset), and connections under it are served as before. Past
 * a second bound (as many being answered 503 at once as the limit) connections are closed at
 * once, so a flood holds a bounded number of descriptors. Against a real `serve` process with
 * `--max-connections 4` (SESSION_PAGER_MAX_CONNECTIONS's flag), whose connections come through its early listener.
 */
import { spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, startServerProcess, type ServerProcess } from './helpers/server-process.js';
import { metricSample, seedSession, tempStore, until, type TempStore } from './server-helpers.js';

const TOKEN = 'conn-limit-token-0123456789';
const LIMIT = 4;
let ts: TempStore;
let server: ServerProcess;

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 'c', 200, 100);
  server = await startServerProcess({ dataDir: ts.dir, token: TOKEN, args: ['--max-connections', String(LIMIT)] });
});

afterAll(async () => {
  await server?.stop();
  await ts.cleanup();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A connection to the server, with what came back on it and how it ended. */
class Conn {
  readonly socket: Socket;
  received = Buffer.alloc(0);
  error: string | null = null;
  ended = false;
  readonly closed: Promise<void>;
  private waiter: (() => void) | null = null;

  constructor() {
    this.socket = connect(server.port, server.host);
    this.socket.on('data', (d: Buffer) => {
      this.received = Buffer.concat([this.received, d]);
      this.waiter?.();
    });
    this.socket.on('error', (e: NodeJS.ErrnoException) => (this.error = e.code ?? e.message));
    this.socket.on('end', () => (this.ended = true));
    this.closed = new Promise((r) => this.socket.once('close', () => r()));
    this.socket.once('close', () => this.waiter?.());
  }

  /** Write a GET for `path` and read its answer (head and content-length body), from what is not read yet. */
  async ask(path: string): Promise<Answer> {
    this.received = Buffer.alloc(0);
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    for (;;) {
      const answer = parse(this.received);
      if (answer !== null) return answer;
      if (this.socket.destroyed) throw new Error(`connection closed before a complete answer (${this.error ?? 'no error'}; ${this.received.length} bytes)`);
      await new Promise<void>((r) => (this.waiter = r));
    }
  }
}

function parse(bytes: Buffer): Answer | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers['content-length']);
  if (bytes.length < end + 4 + length) return null;
  return { status: Number(statusLine!.split(' ')[1]), headers, body: bytes.subarray(end + 4, end + 4 + length).toString('utf8') };
}

const PAGE = '/v1/sessions/c/page?maxMessages=5';

/** LIMIT connections, each served a page: the server has admitted them all. */
async function fillTheLimit(): Promise<Conn[]> {
  const held: Conn[] = [];
  for (let i = 0; i < LIMIT; i++) {
    const c = new Conn();
    expect((await c.ask(PAGE)).status).toBe(200);
    held.push(c);
  }
  return held;
}

async function close(conns: Conn[]): Promise<void> {
  for (const c of conns) c.socket.destroy();
  await Promise.all(conns.map((c) => c.closed));
}

/** A new connection's page, once the server has counted closed connections as closed. */
async function servedAgain(): Promise<void> {
  await until('a new connection served a page', async () => {
    const c = new Conn();
    try {
      return (await c.ask(PAGE)).status === 200;
    } finally {
      await close([c]);
    }
  }, 10_000, 50);
}

async function metrics(): Promise<string> {
  const c = new Conn();
  try {
    const m = await c.ask('/metrics');
    expect(m.status).toBe(200);
    return m.body;
  } finally {
    await close([c]);
  }
}

describe('connection limit (real server process)', () => {
  it('answers connections past the limit 503 overloaded with Retry-After and closes them without a reset; those under it are served, and new ones again once some close', async () => {
    const held = await fillTheLimit();
    // As many as the hard bound lets be answered at once (past it they are closed: the next test).
    const past = Array.from({ length: LIMIT }, () => new Conn());
    try {
      const answers = await Promise.all(past.map((c) => c.ask(PAGE)));
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.headers['retry-after']).toBe('1');
        expect(a.headers['connection']).toBe('close');
        expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
        expect(JSON.parse(a.body)).toEqual({ error: { code: 'overloaded', message: expect.any(String) } });
      }
      // The server closed each after its answer, with a FIN: no reset, no error.
      await Promise.all(past.map((c) => c.closed));
      for (const c of past) {
        expect(c.error).toBeNull();
        expect(c.ended).toBe(true);
      }
      // The admitted connections are still served.
      for (const c of held) expect((await c.ask(PAGE)).status).toBe(200);
      // Two close: two new connections are served, a third is shed.
      await close(held.splice(0, 2));
      await servedAgain();
      const again = [new Conn(), new Conn()];
      held.push(...again);
      for (const c of again) expect((await c.ask(PAGE)).status).toBe(200);
      const third = new Conn();
      expect((await third.ask(PAGE)).status).toBe(503);
      await third.closed;
      expect(third.error).toBeNull();
    } finally {
      await close([...held, ...past]);
    }
    await servedAgain();
    const m = await metrics();
    expect(metricSample(m, 'session_pager_load_shed_total{reason="connections"}')).toBeGreaterThanOrEqual(LIMIT + 1);
    expect(metricSample(m, 'session_pager_errors_total{code="overloaded"}')).toBeGreaterThanOrEqual(LIMIT + 1);
    // This one, and perhaps servedAgain's, not yet seen closed by the server.
    expect(metricSample(m, 'session_pager_connections_open')).toBeGreaterThanOrEqual(1);
    expect(metricSample(m, 'session_pager_connections_open')).toBeLessThanOrEqual(2);
  }, 60_000);

  it('past the hard bound (as many being answered 503 as the limit) closes new connections at once, and counts them', async () => {
    const before = await metrics();
    const droppedBefore = metricSample(before, 'session_pager_connections_dropped_total') ?? 0;
    const shedBefore = metricSample(before, 'session_pager_load_shed_total{reason="connections"}') ?? 0;
    const held = await fillTheLimit();
    // Twelve connections that send nothing: the first four wait for a request (up to a second),
    // being answered 503; the eight past them are closed with nothing written.
    const flood = Array.from({ length: 12 }, () => new Conn());
    try {
      await Promise.all(flood.map((c) => c.closed));
      const answered = flood.filter((c) => c.received.length > 0);
      const dropped = flood.filter((c) => c.received.length === 0);
      expect(answered.length).toBe(LIMIT);
      expect(dropped.length).toBe(12 - LIMIT);
      for (const c of answered) expect(parse(c.received)?.status).toBe(503);
      // The admitted connections are still served.
      for (const c of held) expect((await c.ask(PAGE)).status).toBe(200);
    } finally {
      await close([...held, ...flood]);
    }
    await servedAgain();
    const after = await metrics();
    expect(metricSample(after, 'session_pager_connections_dropped_total')).toBe(droppedBefore + 12 - LIMIT);
    expect(metricSample(after, 'session_pager_load_shed_total{reason="connections"}')).toBe(shedBefore + LIMIT);
  }, 60_000);

  it.each(['0', '-1', '1.5', 'many'])('refuses to start with SESSION_PAGER_MAX_CONNECTIONS=%s', (value) => {
    const r = spawnSync(process.execPath, [BIN, 'serve', '--data', ts.dir, '--port', '0', '--workers', '1'], {
      encoding: 'utf8',
      env: { ...process.env, SESSION_PAGER_TOKEN: TOKEN, SESSION_PAGER_MAX_CONNECTIONS: value },
      timeout: 15_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('SESSION_PAGER_MAX_CONNECTIONS must be an integer >= 1');
  }, 20_000);
});
