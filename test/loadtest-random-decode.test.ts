/**
 * The random scenario's load generator turns into text only the answers it
 * reads: every error answer (its SPEC code) and one 2xx in CHECK_ONE_IN (checked by
 * the client library). autocannon by itself decodes every body into a string
 * as it arrives; at 64 connections of ~170 KB pages those half-built strings
 * made the generator's GC, and so its CPU a request, grow with the
 * connections, taken from the server it measures on the same cores.
 *
 * Against a stub server: 200s with a large body that is no page (so each
 * checked one is counted as an error) and a 503 with a SPEC error body every
 * tenth answer. What must hold: every 503 counted by its code, one 2xx in
 * CHECK_ONE_IN checked, and the bytes decoded from Buffers about those answers'
 * bodies, not every body.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Recorder } from '../src/loadtest/recorder.js';
import { CHECK_ONE_IN, randomPages, type LoopContext } from '../src/loadtest/scenarios.js';
import { SessionPagerClient } from '../src/client/index.js';

const BODY = Buffer.from(JSON.stringify({ notAPage: 'x'.repeat(100_000) }));
const SHED = Buffer.from(JSON.stringify({ error: { code: 'overloaded', message: 'server is overloaded; retry shortly' } }));

let server: Server;
let url: string;
let answered = 0;
let shed = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (++answered % 10 === 0) {
      shed++;
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': SHED.length, 'retry-after': '1' });
      res.end(SHED);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': BODY.length });
    res.end(BODY);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('loadtest random scenario', () => {
  it('decodes only the answers it reads: every error, one 2xx in CHECK_ONE_IN', async () => {
    const rec = new Recorder();
    const stop = new AbortController();
    const c: LoopContext = { client: new SessionPagerClient({ baseUrl: url }), rec, stop: stop.signal, maxMessages: 50, rand: Math.random };
    let decoded = 0;
    // Every Buffer decoded to text in this process meanwhile (a string built with `+= chunk` calls it too).
    const proto = Buffer.prototype as { toString: (this: Buffer, encoding?: BufferEncoding, start?: number, end?: number) => string };
    const original = proto.toString;
    proto.toString = function counted(this: Buffer, encoding?: BufferEncoding, start?: number, end?: number) {
      decoded += Math.max(0, Math.min(end ?? this.length, this.length) - (start ?? 0));
      return original.call(this, encoding, start, end);
    };
    try {
      await randomPages(c, { url, headers: {}, connections: 4, durationS: 1, targets: [{ id: 's1', lastSeq: 1000 }] });
    } finally {
      proto.toString = original;
      stop.abort();
    }
    const sheds = rec.byCode.get('overloaded') ?? 0;
    const checked = [...rec.byCode].filter(([k]) => k !== 'overloaded').reduce((a, [, v]) => a + v, 0);
    expect(rec.ok).toBeGreaterThan(10 * CHECK_ONE_IN);
    // Every 503 the recorder counted was read for its code (none counted as a bare http_503).
    expect(rec.byStatus.get('503')).toBe(sheds);
    expect(sheds).toBeGreaterThan(0);
    // One 2xx in CHECK_ONE_IN checked (each is no page: an error apiece).
    expect(Math.abs(checked - Math.ceil(rec.ok / CHECK_ONE_IN))).toBeLessThanOrEqual(1);
    // Decoded: those answers' bodies, and at most 1 KB a request besides (heads), not every body.
    const read = (checked + 1) * BODY.length + sheds * SHED.length;
    expect(decoded).toBeLessThanOrEqual(read + rec.requests * 1024);
    expect(decoded).toBeGreaterThanOrEqual(checked * BODY.length);
  });
});
