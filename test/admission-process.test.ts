/**
 * Admission against a real `serve` process (issue 16 item 8, issue 15
 * "Capacity and overload"): one page slot (SESSION_PAGER_MAX_IN_FLIGHT=1),
 * held by a client that asks a page far larger than the kernel's socket
 * buffers and does not read it (a page's slot is held until its response
 * is written). Then:
 * - a request with no free slot and no room in the queue is answered at
 *   once `503 overloaded` with `Retry-After`, in the SPEC's error shape;
 * - a queued request whose wait reaches the queue's time bound is shed the
 *   same way, and never served afterwards, not even once the slot is free;
 * - a queued request whose slot frees within the bound is served;
 * - the moment the slot frees, pages are served again (recovery at once).
 * No timing is asserted: the order of events and the answers are.
 *
 * And with the default sizing (two workers, no admission settings): 16
 * concurrent requests of a page that takes tens of ms in flight, normal
 * load on a 2-core machine, are all answered 200, on a fresh server (no
 * page timed yet) and again and again after (2 in flight per worker with a
 * queue bound of 0.5 in-flight times shed all but ~6 of them).
 */
import { mkdir } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { startServerProcess, type ServerProcess } from './helpers/server-process.js';
import { rawRequest, tempStore, until, T0, type TempStore } from './server-helpers.js';

const TOKEN = 'admission-process-token-7c1e';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** 96 messages of 256 KiB: a 24 MiB page, past what loopback buffers hold for a client that does not read. */
const BIG_EVENTS = 96;
const BIG_TEXT = 256 * 1024;
/** 16 concurrent page requests, 12 rounds; each page 400 messages of 4 KiB (1.6 MB: tens of ms in flight). */
const CONNS = 16;
const ROUNDS = 12;
const WIDE_EVENTS = 800;
const WIDE_PAGE = 400;

let ts: TempStore;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  ts = await tempStore(1);
  await ts.store.create('big', { title: 'large messages' });
  for (let at = 0; at < BIG_EVENTS; at += 8) {
    const events: SessionEvent[] = [];
    for (let seq = at; seq < at + 8; seq++) events.push({ type: 'user/message', seq, time: T0 + seq, data: { content: [{ type: 'text', text: String.fromCharCode(97 + (seq % 26)).repeat(BIG_TEXT) }] } });
    await ts.store.append('big', events);
  }
  await ts.store.create('wide', { title: 'many mid-sized messages' });
  for (let at = 0; at < WIDE_EVENTS; at += 100) {
    const events: SessionEvent[] = [];
    for (let seq = at; seq < at + 100; seq++) events.push({ type: 'user/message', seq, time: T0 + seq, data: { content: [{ type: 'text', text: `${seq} `.padEnd(4096, 'wxyz') }] } });
    await ts.store.append('wide', events);
  }
  await ts.store.close();
}, 120_000);

afterAll(async () => {
  for (const s of servers) await s.stop();
  await ts.cleanup();
});

async function serve(env: Record<string, string>): Promise<ServerProcess> {
  const tmp = join(ts.dir, `tmp-${servers.length}`);
  await mkdir(tmp);
  const s = await startServerProcess({ dataDir: ts.dir, token: TOKEN, env: { TMPDIR: tmp, SESSION_PAGER_MAX_IN_FLIGHT: '1', ...env } });
  servers.push(s);
  await until('ready', async () => (await rawRequest(`${s.url}/readyz`)).status === 200, 30_000, 50);
  return s;
}

async function metric(s: ServerProcess, name: string): Promise<number> {
  const text = (await rawRequest(`${s.url}/metrics`, { headers: AUTH })).body.toString();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no metric ${name}`);
  return Number(m[1]);
}

let holder: Socket | undefined;

/**
 * Ask the whole large page and never read it: the server cannot finish writing it, so it keeps
 * its slot. Resolves once the page is built and holds the slot, with the store's page count then.
 */
async function holdSlot(s: ServerProcess): Promise<number> {
  const before = await metric(s, 'session_pager_store_pages_served_total');
  const socket = connect(s.port, s.host);
  holder = socket;
  socket.on('error', () => undefined);
  socket.on('connect', () => {
    socket.pause();
    socket.write(`GET /v1/sessions/big/page?maxMessages=${BIG_EVENTS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
  });
  await until('the large page built, holding the slot', async () => (await metric(s, 'session_pager_store_pages_served_total')) === before + 1 && (await metric(s, 'session_pager_admission_in_flight')) === 1, 30_000, 50);
  return before + 1;
}
holdSlot.release = () => holder?.destroy();

function expectShed(r: { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }): void {
  expect(r.status).toBe(503);
  expect(r.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  expect(String(r.headers['content-type'])).toMatch(/^application\/json/);
  const body = JSON.parse(r.body.toString()) as { error: { code: string; message: string } };
  expect(body).toMatchObject({ error: { code: 'overloaded', message: expect.stringMatching(/overloaded/) } });
}

describe('admission in a real serve process (one page slot)', () => {
  it('sheds at once what finds no slot and no room to wait: 503 overloaded, Retry-After, the SPEC shape; serves again once the slot frees', async () => {
    const s = await serve({ SESSION_PAGER_MAX_QUEUE: '0', SESSION_PAGER_SHED_DELAY_MS: '0' });
    const served = await holdSlot(s);
    expectShed(await rawRequest(`${s.url}/v1/sessions/big/page?maxMessages=1`, { headers: AUTH }));
    // Not built: the shed request never reached the store.
    expect(await metric(s, 'session_pager_store_pages_served_total')).toBe(served);
    expect(await metric(s, 'session_pager_admission_shed_total')).toBe(1);
    holdSlot.release();
    await until('the slot given back', async () => (await metric(s, 'session_pager_admission_in_flight')) === 0, 30_000, 50);
    const r = await rawRequest(`${s.url}/v1/sessions/big/page?maxMessages=1`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body.toString()) as { fromSeq: number }).fromSeq).toBe(BIG_EVENTS - 1);
  }, 120_000);

  it('a queued request past its time bound is shed and never served late; one whose slot frees within the bound is served', async () => {
    // The queue bound pinned to 3 s (time enough to see the next one queued and free the slot, under load too).
    const s = await serve({ SESSION_PAGER_MIN_QUEUE_MS: '3000', SESSION_PAGER_MAX_QUEUE_MS: '3000', SESSION_PAGER_SHED_DELAY_MS: '0' });
    const served = await holdSlot(s);
    // Waits its bound in the queue while the slot stays held: shed.
    expectShed(await rawRequest(`${s.url}/v1/sessions/big/page?maxMessages=2`, { headers: AUTH }));
    expect(await metric(s, 'session_pager_admission_shed_total')).toBe(1);
    // The next one waits in the queue; the slot frees while it waits: it is admitted and served.
    const queued = rawRequest(`${s.url}/v1/sessions/big/page?maxMessages=3`, { headers: AUTH });
    await until('a request in the queue', async () => (await metric(s, 'session_pager_admission_queued')) === 1, 30_000, 5);
    holdSlot.release();
    const r = await queued;
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body.toString()) as { fromSeq: number }).fromSeq).toBe(BIG_EVENTS - 3);
    await until('nothing in flight', async () => (await metric(s, 'session_pager_admission_in_flight')) === 0, 30_000, 50);
    // Exactly one page more than before: the queued one. The shed one was never built, then or later.
    expect(await metric(s, 'session_pager_store_pages_served_total')).toBe(served + 1);
    expect(await metric(s, 'session_pager_admission_shed_total')).toBe(1);
  }, 120_000);
});

describe('admission in a real serve process (default sizing, two workers)', () => {
  it(`answers ${CONNS} concurrent requests of a page that takes tens of ms all 200, from the first burst on`, async () => {
    const tmp = join(ts.dir, 'tmp-default');
    await mkdir(tmp);
    const env: NodeJS.ProcessEnv = { TMPDIR: tmp };
    // The defaults under test: no admission tuning from the environment of the run.
    for (const k of ['SESSION_PAGER_ADMISSION', 'SESSION_PAGER_MAX_IN_FLIGHT', 'SESSION_PAGER_QUEUE_FACTOR', 'SESSION_PAGER_MIN_QUEUE_MS', 'SESSION_PAGER_MAX_QUEUE_MS', 'SESSION_PAGER_MAX_QUEUE']) env[k] = '';
    const s = await startServerProcess({ dataDir: ts.dir, token: TOKEN, args: ['--workers', '2'], env });
    servers.push(s);
    await until('ready', async () => (await rawRequest(`${s.url}/readyz`)).status === 200, 30_000, 50);
    const statuses = new Map<number, number>();
    for (let round = 0; round < ROUNDS; round++) {
      // Pages at different cuts, so none is the prepared page of another request.
      const answers = await Promise.all(
        Array.from({ length: CONNS }, (_, i) => rawRequest(`${s.url}/v1/sessions/wide/page?maxMessages=${WIDE_PAGE}&throughSeq=${WIDE_EVENTS - 1 - ((round * CONNS + i) % (WIDE_EVENTS - WIDE_PAGE))}`, { headers: AUTH })),
      );
      for (const r of answers) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: CONNS * ROUNDS });
    expect(await metric(s, 'session_pager_admission_shed_total')).toBe(0);
    expect(await metric(s, 'session_pager_admission_in_flight')).toBe(0);
  }, 120_000);
});
