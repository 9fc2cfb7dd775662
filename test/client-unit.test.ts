/**
 * The client library's pure parts and its portability: the page checker on
 * every rule it enforces, joins, the SSE parser on split and cut input,
 * 503 retry with Retry-After, and the rule that nothing reachable from
 * `session-pager/client` imports or uses a Node-only API (checked both by
 * walking its imports and by type-checking it with the DOM library and no
 * Node types at all).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkJoin, checkPage, ClientError, packEvents, parseRetryAfter, SessionPagerClient, SseParser, type Page, type SessionEvent } from '../src/client/index.js';
import { makeEvents } from './server-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');

function pageOf(events: SessionEvent[], through = events.at(-1)!.seq, extra: Partial<Page> = {}): Page {
  const from = events[0]!.seq;
  return { sessionId: 's', throughSeq: through, fromSeq: from, toSeq: events.at(-1)!.seq + 1, hasMore: from > 0, records: packEvents(events), ...extra };
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

describe('checkPage', () => {
  const events = makeEvents(10, 30);
  const good = pageOf(events, 39);

  it('expands a valid page into exactly its events', () => {
    const { events: out } = checkPage(clone(good), { sessionId: 's', throughSeq: 39, canonical: true });
    expect(out).toEqual(events);
    expect(checkPage({ sessionId: 's', throughSeq: -1, fromSeq: 0, toSeq: 0, hasMore: false, records: [] }).events).toEqual([]);
  });

  const rowAt = (p: Page) => p.records.findIndex((r) => 'chunks' in r);
  const cases: [string, (p: Page & Record<string, unknown>) => unknown, RegExp][] = [
    ['not an object', () => [], /not a JSON object/],
    ['missing records', (p) => ({ ...p, records: undefined }), /records must be an array/],
    ['negative fromSeq', (p) => ({ ...p, fromSeq: -1 }), /fromSeq must be/],
    ['toSeq before fromSeq', (p) => ({ ...p, toSeq: 5 }), /toSeq must be/],
    ['unsafe throughSeq', (p) => ({ ...p, throughSeq: 2 ** 53 }), /throughSeq must be/],
    ['hasMore wrong', (p) => ({ ...p, hasMore: false }), /hasMore is false but fromSeq is 10/],
    ['toSeq past the cut', (p) => ({ ...p, throughSeq: 30 }), /past throughSeq/],
    ['other session', (p) => ({ ...p, sessionId: 'x' }), /for session "x"/],
    ['record with two keys', (p) => ({ ...p, records: [{ event: events[0], chunks: {} }, ...p.records.slice(1)] }), /exactly one key/],
    ['gap in records', (p) => ({ ...p, records: p.records.filter((_, i) => i !== 3) }), /where seq \d+ was expected/],
    ['records short of toSeq', (p) => ({ ...p, records: p.records.slice(0, -1) }), /records cover \[10, 38\), the page says \[10, 39\)|records cover/],
    ['bad event', (p) => ({ ...p, records: [{ event: { type: 'x', seq: 10, time: 1.5 } }, ...p.records.slice(1)] }), /time must be a safe integer/],
    [
      'row dt length',
      (p) => {
        const q = clone(p);
        (q.records[rowAt(q)] as { chunks: { data: { dt: number[] } } }).chunks.data.dt.pop();
        return q;
      },
      /dt has \d+ entries, must be/,
    ],
    [
      'row extra key',
      (p) => {
        const q = clone(p);
        (q.records[rowAt(q)] as unknown as { chunks: Record<string, unknown> }).chunks.extra = 1;
        return q;
      },
      /keys must be exactly/,
    ],
    [
      'row member not a string',
      (p) => {
        const q = clone(p);
        (q.records[rowAt(q)] as { chunks: { data: { texts: unknown[] } } }).chunks.data.texts[0] = 7;
        return q;
      },
      /must be a string/,
    ],
  ];
  for (const [name, mutate, message] of cases) {
    it(`rejects: ${name}`, () => {
      const body = mutate(clone(good) as Page & Record<string, unknown>);
      expect(() => checkPage(body, { sessionId: 's' })).toThrow(message);
      try {
        checkPage(body, { sessionId: 's' });
      } catch (e) {
        expect(e).toBeInstanceOf(ClientError);
        expect((e as ClientError).code).toBe('invalid_page');
      }
    });
  }

  it('rejects what was not asked: another throughSeq, another end, non-canonical records', () => {
    expect(() => checkPage(clone(good), { throughSeq: 40 })).toThrow(/throughSeq is 39, 40 was asked/);
    expect(() => checkPage(clone(good), { beforeSeq: 30 })).toThrow(/ends at 40, the cut asked ends at 30/);
    const unpacked = { ...clone(good), records: events.map((event) => ({ event })) };
    expect(checkPage(unpacked).events).toEqual(events);
    expect(() => checkPage(unpacked, { canonical: true })).toThrow(/not the canonical packing/);
  });
});

describe('checkJoin', () => {
  const newer = pageOf(makeEvents(20, 20), 39);
  it('accepts an exact join and names a gap, an overlap and a moved cut', () => {
    expect(() => checkJoin(newer, pageOf(makeEvents(10, 10), 39))).not.toThrow();
    expect(() => checkJoin(newer, pageOf(makeEvents(10, 8), 39))).toThrow(/a gap \[18, 20\)/);
    expect(() => checkJoin(newer, pageOf(makeEvents(10, 12), 39))).toThrow(/an overlap \[20, 22\)/);
    expect(() => checkJoin(newer, pageOf(makeEvents(10, 10), 45))).toThrow(/pinned at 39/);
  });
});

describe('SseParser', () => {
  const text = 'retry: 250\n\n: heartbeat\n\nid: 3\nevent: event\ndata: {"a":1}\n\nid: 4\r\nevent: event\r\ndata: line1\r\ndata: line2\r\n\r\nevent: end\ndata: {}\n\n';
  const want = [
    { event: 'event', data: '{"a":1}', id: '3' },
    { event: 'event', data: 'line1\nline2', id: '4' },
    { event: 'end', data: '{}', id: undefined },
  ];
  it('gives the same frames however the text is split (CRLF across chunks too)', () => {
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const got = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
      expect(got).toEqual(want);
      expect(p.retryMs).toBe(250);
      expect(p.comments).toBe(1);
    }
    const bytewise = new SseParser();
    const got = [];
    for (const ch of text) got.push(...bytewise.push(ch));
    expect(got).toEqual(want);
  });

  it('reads a snapshot-sized data line fed in small chunks as one line; a frame ended by CRs is dispatched with its chunk', () => {
    const page = JSON.stringify({ records: Array.from({ length: 1000 }, (_, k) => ({ event: { seq: k, text: `t${k}` } })) });
    for (const eol of ['\n', '\r', '\r\n']) {
      const frame = `id: 7${eol}event: snapshot${eol}data: ${page}${eol}${eol}id: 8${eol}event: event${eol}data: {}${eol}${eol}`;
      for (const size of [1, 7, 100, 4096]) {
        const p = new SseParser();
        const got = [];
        for (let at = 0; at < frame.length; at += size) got.push(...p.push(frame.slice(at, at + size)));
        expect(got).toEqual([
          { event: 'snapshot', data: page, id: '7' },
          { event: 'event', data: '{}', id: '8' },
        ]);
        expect(p.pending).toBe(0);
      }
    }
  });

  it('never dispatches a frame cut before its blank line', () => {
    const p = new SseParser();
    expect(p.push('id: 9\nevent: event\ndata: {"partial":')).toEqual([]);
    expect(p.pending).toBeGreaterThan(0);
    expect(new SseParser().push('\ufeffdata: x\n\n')).toEqual([{ event: 'message', data: 'x', id: undefined }]);
  });
});

describe('requests', () => {
  it('retries an overloaded 503 after its Retry-After, then gives the error with its code', async () => {
    const calls: number[] = [];
    const answers = [503, 503, 200];
    const fake: typeof fetch = async () => {
      calls.push(Date.now());
      const status = answers.shift() ?? 503;
      if (status === 200) return new Response(JSON.stringify({ sessions: [] }), { status: 200, headers: { 'content-type': 'application/json' } });
      return new Response(JSON.stringify({ error: { code: 'overloaded', message: 'busy' } }), { status: 503, headers: { 'retry-after': '0' } });
    };
    const c = new SessionPagerClient({ baseUrl: 'http://127.0.0.1:1/', fetch: fake, overloadRetries: 2 });
    expect(await c.sessions()).toEqual([]);
    expect(calls).toHaveLength(3);
    const none = new SessionPagerClient({ baseUrl: 'http://127.0.0.1:1', fetch: fake, overloadRetries: 0 });
    await expect(none.sessions()).rejects.toMatchObject({ code: 'overloaded', status: 503, retryAfter: 0, message: 'busy' });
    expect(parseRetryAfter('7')).toBe(7);
    expect(parseRetryAfter(new Date(Date.now() + 3000).toUTCString())).toBeGreaterThanOrEqual(2);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });

  it('names a non-JSON error body by its status', async () => {
    const fake: typeof fetch = async () => new Response('<html>bad gateway</html>', { status: 502 });
    const c = new SessionPagerClient({ baseUrl: 'http://x', fetch: fake });
    await expect(c.info('a')).rejects.toMatchObject({ code: 'http_502', status: 502 });
  });
});

/** Every module reachable from `entry` by static or dynamic import. */
function reachable(entry: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (out.has(file)) continue;
    const src = readFileSync(file, 'utf8');
    const specs = [...src.matchAll(/(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm)].map((m) => (m[1] ?? m[2] ?? m[3]) as string);
    out.set(file, specs);
    for (const s of specs) if (s.startsWith('.')) todo.push(resolve(dirname(file), s.replace(/\.js$/, '.ts')));
  }
  return out;
}

describe('portability of session-pager/client', () => {
  const graph = reachable(join(ROOT, 'src/client/index.ts'));

  it('imports only its own relative modules: no node: builtins, no packages', () => {
    expect(graph.size).toBeGreaterThanOrEqual(7);
    for (const [file, specs] of graph) for (const s of specs) expect({ file, s, relative: s.startsWith('./') || s.startsWith('../') }).toMatchObject({ relative: true });
    for (const file of graph.keys()) expect(file.startsWith(join(ROOT, 'src') + '/')).toBe(true);
  });

  it('uses no Node-only globals in any module it reaches', () => {
    const forbidden = /\b(Buffer|process|require|__dirname|__filename|setImmediate|module\.exports|global)\b(?!\s*:)/;
    for (const file of graph.keys()) {
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '')
        .replace(/'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, "''");
      expect({ file, hit: forbidden.exec(code)?.[0] ?? null }).toEqual({ file, hit: null });
    }
  });

  it('type-checks with the DOM library and no Node types', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sp-client-tsc-'));
    try {
      const cfg = join(dir, 'tsconfig.json');
      writeFileSync(
        cfg,
        JSON.stringify({
          compilerOptions: { target: 'ES2022', module: 'ES2022', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], strict: true, noEmit: true, skipLibCheck: true },
          files: [join(ROOT, 'src/client/index.ts')],
        }),
      );
      const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', cfg], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is the package export session-pager/client (built)', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('session-pager/client'); console.log(typeof m.SessionPagerClient, typeof m.checkPage)"], { cwd: ROOT, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('function function');
  });
});
