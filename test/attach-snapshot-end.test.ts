/**
 * The attach load's snapshot end (loadtest/snapshot-end.mjs): where a follow's snapshot event ends
 * in its body as it arrives, identity, zstd (the frames walked, only the small ones decoded) and
 * gzip, whatever the chunks' boundaries; the sampled check of the whole snapshot (the SPEC's
 * snapshot: cursor, the tail page through it) and what it catches (a blank line inside a frame
 * the walk did not decode); bytes that are not the coding named refused.
 *
 * Real server process (loadtest/overload.mjs, attach, the Accept-Encoding a browser sends, a
 * coding alone, none): every follow's snapshot found (200s, no error, no other answer) and some
 * checked whole.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSnapshot, SnapshotEnd } from '../loadtest/snapshot-end.mjs';
import { snapshotEdges } from '../src/main/server/sse-frames.js';
import { StreamCoder } from '../src/main/server/stream-coding.js';
import { codeHere } from '../src/main/coded-page.js';

const ROOT = resolve(import.meta.dirname, '..');

/** A tail page through `seq` of ~300 KB, its strings random (so its coded form is large too). */
function page(seq: number, text = (i: number) => randomBytes(300).toString('base64') + i): Buffer {
  const records = Array.from({ length: 700 }, (_, i) => ({ event: { seq: seq - 700 + i, type: 'user/message', text: text(i) } }));
  return Buffer.from(JSON.stringify({ sessionId: 's', throughSeq: seq, fromSeq: seq - 700, toSeq: seq + 1, hasMore: true, records }));
}

/** A follow's body as the server writes it (follow-stream.ts start): retry, the snapshot frame's edges around the page, one heartbeat. */
function body(encoding: 'identity' | 'gzip' | 'zstd', p: Buffer, seq: number, edgesOf: Buffer = p): { bytes: Buffer; snapshotEnd: number } {
  const edges = snapshotEdges(seq, edgesOf);
  if (edges === null) throw new Error('no edges');
  const retry = Buffer.from('retry: 1000\n\n');
  const heartbeat = Buffer.from(': heartbeat\n\n');
  if (encoding === 'identity') {
    const snapshot = Buffer.concat([retry, edges.before, p, edges.after]);
    return { bytes: Buffer.concat([snapshot, heartbeat]), snapshotEnd: snapshot.length };
  }
  const c = new StreamCoder(encoding, 3);
  const snapshot = Buffer.concat([c.code(Buffer.concat([retry, edges.before])), c.coded(codeHere(p, encoding, 3)), c.code(edges.after)]);
  return { bytes: Buffer.concat([snapshot, c.code(heartbeat)]), snapshotEnd: snapshot.length };
}

/** Feeds `bytes` in chunks of `size` (chunk i arriving at time i); resolves with the end's time and the check. */
async function feed(encoding: string | undefined, bytes: Buffer, size: number, validate: boolean): Promise<{ end: number | null; valid: boolean | null }> {
  const s = new SnapshotEnd(encoding, validate);
  for (let i = 0, at = 0; i < bytes.length; i += size, at++) s.push(bytes.subarray(i, i + size), at);
  // gzip's output comes from zlib's stream, a few turns of the loop later
  for (let k = 0; k < 400 && s.end === null; k++) await new Promise((r) => setTimeout(r, 5));
  s.close();
  return { end: s.end, valid: s.valid };
}

describe('the attach load: where the snapshot ends', () => {
  for (const encoding of ['identity', 'zstd', 'gzip'] as const) {
    it(`${encoding}: found at the chunk that completes it, whatever the chunks, and the sampled check passes`, async () => {
      const p = page(5000);
      const { bytes, snapshotEnd } = body(encoding, p, 5000);
      for (const size of [1, 3, 7, 997, 16_384, 65_536, bytes.length]) {
        if (size < 100 && encoding === 'gzip') continue; // tiny chunks: the zstd walk's headers split everywhere; zlib's stream per byte is only slow
        const expected = Math.floor((snapshotEnd - 1) / size);
        const got = await feed(encoding === 'identity' ? undefined : encoding, bytes, size, false);
        // gzip's end is the last chunk fed when zlib's output showed it: at or after the one completing it
        if (encoding === 'gzip') expect(got.end ?? -1).toBeGreaterThanOrEqual(expected);
        else expect({ size, end: got.end, valid: got.valid }).toEqual({ size, end: expected, valid: null });
        const checked = await feed(encoding, bytes, size, true);
        expect({ size, valid: checked.valid }).toEqual({ size, valid: true });
      }
    }, 60_000);
  }

  it('zstd: the page frame is walked, not decoded, and the sampled check catches what that assumes (no blank line inside it)', async () => {
    // A "page" with a raw blank line in it: not a page, and not one SSE event either (the server
    // never sends one: snapshotEdges refuses such bytes, and the frame is then cut into data lines).
    const p = page(10, (i) => (i === 350 ? 'x\n\ny' : randomBytes(300).toString('base64')));
    const bad = Buffer.from(p.toString('latin1').replace('x\\n\\ny', 'x\n\ny'), 'latin1');
    expect(snapshotEdges(10, bad)).toBeNull();
    const { bytes } = body('zstd', bad, 10, p);
    // Unchecked: the walk takes the frame whole and finds the end after it (the time is right for a real page).
    expect((await feed('zstd', bytes, 4096, false)).end).not.toBeNull();
    // Checked: the whole snapshot decoded; the event ends at the blank line inside and is no snapshot.
    expect((await feed('zstd', bytes, 4096, true)).valid).toBe(false);
  });

  it("checkSnapshot: the SPEC's snapshot (cursor, the tail page through it) and nothing else", () => {
    const ok = (cursor: number, pg: object) => Buffer.from(`event: snapshot\ndata: ${JSON.stringify({ cursor, page: pg })}\n\n`);
    expect(checkSnapshot(ok(7, { throughSeq: 7, toSeq: 8, records: [] }))).toBe(true);
    expect(checkSnapshot(ok(7, { throughSeq: 6, toSeq: 8, records: [] }))).toBe(false);
    expect(checkSnapshot(ok(7, { throughSeq: 7, toSeq: 7, records: [] }))).toBe(false);
    expect(checkSnapshot(ok(7, { throughSeq: 7, toSeq: 8 }))).toBe(false);
    expect(checkSnapshot(Buffer.from('event: snapshot\ndata: {"cursor":7,"page":\n\n'))).toBe(false);
  });

  it('refuses a body that is not the coding it names', () => {
    const s = new SnapshotEnd('zstd', false);
    expect(() => s.push(Buffer.from('id: 1\nevent: snapshot\ndata: {}\n\n'), 0)).toThrow(/zstd/);
    expect(() => new SnapshotEnd('br', false)).toThrow(/br/);
  });
});

interface Totals {
  ok: number;
  shed: number;
  other: number;
  errors: number;
  checked: number;
}

/** overload.mjs attach, two 4 / 8 window pairs, with `encoding`: its JSON's totals and the header it sent. */
function attachRun(encoding: string): Promise<{ totals: Totals; acceptEncoding: string }> {
  const args = [join(ROOT, 'loadtest', 'overload.mjs'), '--json', '--scenario', 'attach', '--hold', '100', '--workers', '2', '--sessions', '4', '--session-events', '3000', '--connections', '4,8', '--modes', 'ignore', '--interleave', '2', '--window', '1', '--window-settle', '0.2', '--window-quiet', '0.1', '--warmup', '1', '--encoding', encoding];
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`overload.mjs exited ${code}: ${err.trim()}`));
      const r = JSON.parse(out.trim().split('\n').at(-1) as string) as { acceptEncoding: string; interleave: { totals: Totals } };
      done({ totals: r.interleave.totals, acceptEncoding: r.acceptEncoding });
    });
  });
}

describe('the attach load against a real server', () => {
  for (const [encoding, sent] of [
    ['browser', 'gzip, deflate, br, zstd'],
    ['gzip', 'gzip'],
    ['identity', 'identity'],
  ] as const) {
    it(`${encoding}: every follow's snapshot found, some checked whole`, async () => {
      const { totals, acceptEncoding } = await attachRun(encoding);
      expect(acceptEncoding).toBe(sent);
      expect({ other: totals.other, errors: totals.errors }).toEqual({ other: 0, errors: 0 });
      expect(totals.ok).toBeGreaterThan(20);
      expect(totals.checked).toBeGreaterThan(0);
    }, 120_000);
  }
});
