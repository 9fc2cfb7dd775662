/**
 * The corruption fault suite (issue 16), against a real server process.
 *
 * Sessions in both frame formats (and mixed) are damaged on disk while the
 * server runs, one fault a trial: a flipped byte, a flipped bit in a header
 * field (SPF2 frame headers, the first bytes of JSONL frames, fields of
 * entry lines, of frames.idx, frames.crc2 and frames.meta records), a
 * truncation, garbage over a range, garbage appended; in the log and in
 * every sidecar and projection. Then pages with random parameters: each
 * 200 must equal the reference reader over the log as written, any other
 * answer must be `corrupt_range` (422) or `repair_required` (409); never a
 * 5xx. The catalog and the session's info always answer 200. The files are
 * restored after each trial.
 *
 * Then the matrix: every cell the issue names is damaged at least once, not
 * left to chance: in each session (JSONL, binary, mixed), a bit flipped in
 * every field of the first, a middle and the last record of every file (the
 * SPF2 header fields of binary frames, the keys of JSONL frames and of the
 * header frame, every key of entry lines and of the metadata sidecar, every
 * field of frames.idx, frames.crc2 and frames.meta records), and a byte flip,
 * a truncation and garbage in every file; the run asserts every cell was
 * met. CI flips one random bit per field; the long mode one bit in every
 * byte of every field.
 *
 * Then repair: fresh sessions damaged the same ways, `repair` and `reindex`
 * run as the CLI, and every page that covers no damaged frame must be
 * served exactly (repair never drops a valid frame).
 *
 * CI runs a bounded number of trials; SESSION_PAGER_FAULTS_LONG=1 runs the
 * long mode (more trials and repairs); SESSION_PAGER_FAULTS_SEED picks the
 * seed (printed with every failure).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntryLine, Page, PageParams, SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { writeRandomLog, type BatchSpec } from './helpers/random-log.js';
import { get, prng, startFaultServer, type Prng } from './helpers/fault-server.js';
import { BIN, type ServerProcess } from './helpers/server-process.js';

const LONG = process.env.SESSION_PAGER_FAULTS_LONG === '1';
const SEED = Number(process.env.SESSION_PAGER_FAULTS_SEED ?? 16_002);
const TRIALS = LONG ? 2000 : 60;
const PAGES_PER_TRIAL = 4;
const REPAIRS = LONG ? 60 : 6;
const MATRIX_PAGES = 2;

/** Figures of the run, printed at the end (docs/reliability.md quotes them). */
const figures = { matrixTrials: 0, matrixCells: 0, trials: 0, faults: {} as Record<string, number>, pages: 0, exact: 0, refused: {} as Record<string, number>, wrong: 0, serverErrors: 0, repairs: 0, repairPages: 0 };

function conversation(turns: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  const push = (e: Record<string, unknown>) => out.push({ ...e, seq: out.length, time: 1_700_000_000_000 + out.length * 5 } as SessionEvent);
  for (let t = 0; t < turns; t++) {
    push({ type: 'user/message', data: { text: `question ${t} é ✓` } });
    const first = out.length;
    for (let k = 0; k < 5 + (t % 4); k++) push({ type: 'assistant/chunk', data: { turn: t, step: 0, chunk: { type: t % 3 === 2 ? 'reasoning-delta' : 'text-delta', index: 0, text: `w${k} ` } } });
    if (t % 5 === 3) push({ type: 'assistant/chunk', data: { turn: t, step: 0, chunk: { type: 'tool-call-delta', index: 1, id: `c${t}`, name: 'grep', argumentsDelta: '{"q":' } } });
    push({ type: 'tool/result', data: { ok: true, n: t, out: 'x'.repeat(t % 17) } });
    if (t % 4 === 1) push({ type: 'assistant/message', data: { text: 'draft' }, surfaceOp: 'replace' });
    push({ type: 'assistant/message', data: { text: `answer ${t}`, usage: { inputTokens: t, outputTokens: 2 } }, sourceEventSeqs: [first] });
  }
  return out;
}

const FORMATS: Record<string, BatchSpec[]> = {
  jsonl: [{ size: 5, format: 'jsonl' }],
  binary: [{ size: 6, format: 'binary' }],
  mixed: [
    { size: 4, format: 'jsonl' },
    { size: 7, format: 'binary' },
  ],
};

interface Pristine {
  id: string;
  files: Map<string, Buffer>;
  log: ReferenceLog;
  entries: EntryLine[];
}

let dir: string;
let server: ServerProcess;
const pristine: Pristine[] = [];

function sessionFiles(id: string): string[] {
  const s = join(dir, 'sessions');
  const projections = join(s, 'index', id);
  return [join(s, `${id}.events`), join(s, 'index', `${id}.entries.jsonl`), join(s, 'index', `${id}.index.json`), ...(existsSync(projections) ? readdirSync(projections).map((n) => join(projections, n)) : [])];
}

async function makeSession(id: string, format: keyof typeof FORMATS): Promise<Pristine> {
  await writeRandomLog({ events: conversation(28), batches: FORMATS[format] as BatchSpec[] }, { dataDir: dir, id });
  const files = new Map(sessionFiles(id).map((f) => [f, readFileSync(f)]));
  const entries = readFileSync(join(dir, 'sessions/index', `${id}.entries.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as EntryLine);
  return { id, files, log: await readWholeLog(join(dir, 'sessions', `${id}.events`)), entries };
}

function restore(p: Pristine): void {
  for (const [f, b] of p.files) writeFileSync(f, b);
  // Whatever repair or reindex left beside them.
  const projections = join(dir, 'sessions/index', p.id);
  if (existsSync(projections)) for (const n of readdirSync(projections)) if (!p.files.has(join(projections, n))) rmSync(join(projections, n), { force: true });
}

/** Record layouts of the projections, as [field offset, field bytes] per record. */
const RECORDS: Record<string, { size: number; fields: [number, number][] }> = {
  'frames.idx': { size: 32, fields: [[0, 8], [8, 8], [16, 8], [24, 4], [28, 4]] },
  'frames.crc2': { size: 16, fields: [[0, 4], [4, 4], [8, 4], [12, 4]] },
  'frames.meta': { size: 40, fields: [[0, 8], [8, 8], [16, 4], [20, 4], [24, 4], [28, 4], [32, 4], [36, 4]] },
};
/** SPF2 header fields: magic, frame version, schema version, payload length, CRC. */
const SPF2_FIELDS: [number, number][] = [[0, 4], [4, 2], [6, 2], [8, 4], [12, 4]];

interface Fault {
  file: string;
  kind: string;
  /** The log's byte range it changed (for the repair check), when it is in the log. */
  logRange?: [number, number];
  apply(b: Buffer): Buffer;
}

function flipBit(at: number, r: Prng): (b: Buffer) => Buffer {
  const bit = 1 << r.int(8);
  return (b) => {
    const c = Buffer.from(b);
    if (at < c.length) c[at] = (c[at] as number) ^ bit;
    return c;
  };
}

/** A random fault of one of the session's files. */
function randomFault(p: Pristine, r: Prng): Fault {
  const files = [...p.files.keys()];
  const file = r.pick(files);
  const good = p.files.get(file) as Buffer;
  const name = file.slice(file.lastIndexOf('/') + 1);
  const isLog = name.endsWith('.events');
  const kind = r.pick(['byte', 'field', 'field', 'truncate', 'garbage', 'append'] as const);
  const size = good.length;
  if (kind === 'byte') {
    const at = r.int(size);
    const x = 1 + r.int(255);
    return { file, kind: `byte:${name}`, logRange: isLog ? [at, at + 1] : undefined, apply: (b) => Object.assign(Buffer.from(b), { [at]: (b[at] as number) ^ x }) };
  }
  if (kind === 'field') {
    let at: number;
    if (isLog) {
      const e = r.pick(p.entries);
      if (good[e.offset] === 0x53) {
        const [o, n] = r.pick(SPF2_FIELDS);
        at = e.offset + o + r.int(n);
      } else at = e.offset + r.int(Math.min(40, e.length));
    } else if (name.endsWith('.entries.jsonl')) {
      // A byte of a random line's fields.
      const lineStarts = [0, ...[...good.entries()].filter(([, c]) => c === 0x0a).map(([i]) => i + 1)].filter((s) => s < size);
      const s = r.pick(lineStarts);
      const e = good.indexOf(0x0a, s);
      at = s + r.int(Math.max(1, e - s));
    } else if (RECORDS[name] !== undefined) {
      const { size: rs, fields } = RECORDS[name] as { size: number; fields: [number, number][] };
      const rec = r.int(Math.max(1, Math.floor(size / rs)));
      const [o, n] = r.pick(fields);
      at = rec * rs + o + r.int(n);
    } else at = r.int(size);
    return { file, kind: `field:${name}`, logRange: isLog ? [at, at + 1] : undefined, apply: flipBit(at, r) };
  }
  if (kind === 'truncate') {
    const to = r.int(size);
    return { file, kind: `truncate:${name}`, logRange: isLog ? [to, size] : undefined, apply: (b) => b.subarray(0, to) };
  }
  if (kind === 'garbage') {
    const at = r.int(size);
    const n = 1 + r.int(64);
    const junk = Buffer.from(Array.from({ length: n }, () => r.int(256)));
    return { file, kind: `garbage:${name}`, logRange: isLog ? [at, Math.min(size, at + n)] : undefined, apply: (b) => {
        const c = Buffer.from(b);
        junk.copy(c, at);
        return c;
      },
    };
  }
  const junk = Buffer.from(Array.from({ length: 1 + r.int(200) }, () => r.int(256)));
  return { file, kind: `append:${name}`, apply: (b) => Buffer.concat([b, junk]) };
}

/** One cell of the matrix: a field (or a whole-file fault) of one file of one session, at one record. */
interface Cell {
  cell: string;
  file: string;
  /** Byte ranges of the field, one per record damaged (first, middle, last), with the frame (entry) each describes when known. */
  at: [number, number, EntryLine | undefined][];
}

/** Where `"key":value` (as the writer wrote it) sits in `text` from `from`: the value's byte range. */
function valueRange(buf: Buffer, from: number, to: number, key: string, value: unknown): [number, number] | null {
  const needle = Buffer.from(`"${key}":${JSON.stringify(value)}`, 'utf8');
  const i = buf.subarray(from, to).indexOf(needle);
  if (i < 0) return null;
  const start = from + i + Buffer.byteLength(`"${key}":`);
  return [start, from + i + needle.length];
}

/** First, middle and last of a list (distinct). */
function ends<T>(xs: T[]): T[] {
  return [...new Set([xs[0], xs[Math.floor(xs.length / 2)], xs[xs.length - 1]])].filter((x): x is T => x !== undefined);
}

/** Every field cell of one session's files. */
function fieldCells(p: Pristine): Cell[] {
  const cells = new Map<string, Cell>();
  const add = (cell: string, file: string, range: [number, number] | null, frame?: EntryLine) => {
    if (range === null || range[1] <= range[0]) return;
    const c = cells.get(cell) ?? { cell, file, at: [] };
    c.at.push([range[0], range[1], frame]);
    cells.set(cell, c);
  };
  for (const [file, good] of p.files) {
    const name = file.slice(file.lastIndexOf('/') + 1);
    if (name.endsWith('.events')) {
      for (const e of ends(p.entries.slice(1)).concat(p.entries[0] as EntryLine)) {
        if (good[e.offset] === 0x53) {
          SPF2_FIELDS.forEach(([o, n], k) => add(`log:spf2:${['magic', 'version', 'schema', 'length', 'crc'][k]}`, file, [e.offset + o, e.offset + o + n], e));
          continue;
        }
        const rec = JSON.parse(good.subarray(e.offset, e.offset + e.length).toString('utf8')) as Record<string, unknown>;
        const where = e.offset === 0 ? 'header' : 'frame';
        for (const k of Object.keys(rec)) add(`log:jsonl-${where}:${k}`, file, valueRange(good, e.offset, e.offset + e.length, k, rec[k]), e);
      }
    } else if (name.endsWith('.entries.jsonl')) {
      const lines = good.toString('utf8').split('\n').slice(0, -1);
      const starts: number[] = [];
      let at = 0;
      for (const l of lines) {
        starts.push(at);
        at += Buffer.byteLength(l) + 1;
      }
      for (const i of ends(lines.map((_, i) => i))) {
        const line = JSON.parse(lines[i] as string) as Record<string, unknown>;
        const s0 = starts[i] as number;
        for (const k of Object.keys(line)) add(`entries:${k}`, file, valueRange(good, s0, s0 + Buffer.byteLength(lines[i] as string), k, line[k]), p.entries[i]);
      }
    } else if (name.endsWith('.index.json')) {
      const meta = JSON.parse(good.toString('utf8')) as Record<string, unknown>;
      for (const k of Object.keys(meta)) add(`meta-sidecar:${k}`, file, valueRange(good, 0, good.length, k, meta[k]));
    } else if (RECORDS[name] !== undefined) {
      const { size: rs, fields } = RECORDS[name] as { size: number; fields: [number, number][] };
      const n = Math.floor(good.length / rs);
      for (const rec of ends(Array.from({ length: n }, (_, i) => i))) fields.forEach(([o, w], k) => add(`${name}:field${k}@${o}`, file, [rec * rs + o, rec * rs + o + w], p.entries[rec]));
    }
  }
  return [...cells.values()];
}

function randomParams(p: Pristine, r: Prng): PageParams {
  const last = p.log.events.length - 1;
  const out: PageParams = {};
  if (r.chance(0.5)) out.maxMessages = 1 + r.int(8);
  if (r.chance(0.3)) out.throughSeq = r.int(last + 1);
  if (r.chance(0.3)) out.beforeSeq = 1 + r.int(last + 1);
  if (r.chance(0.2)) out.maxBytes = 50 + r.int(3000);
  return out;
}

function query(p: PageParams): string {
  const q = Object.entries(p).map(([k, v]) => `${k}=${v}`).join('&');
  return q === '' ? '' : `?${q}`;
}

/**
 * Check one page answer: a 200 is the reference page over the log as
 * written, at the cut it names; anything else is one of `allowed`. Returns
 * the error code, or 'ok'.
 */
function checkPage(p: Pristine, params: PageParams, status: number, body: unknown, allowed: string[], what: string): string {
  figures.pages++;
  if (status >= 500) figures.serverErrors++;
  expect(status, `${what}: ${JSON.stringify(body)}`).toBeLessThan(500);
  if (status === 200) {
    const page = body as Page;
    expect(page.throughSeq, what).toBeLessThan(p.log.events.length);
    const want = referencePage(p.log, p.id, { ...params, throughSeq: page.throughSeq });
    if (JSON.stringify(page) !== JSON.stringify(want)) figures.wrong++;
    expect(page, `${what}: a wrong 200`).toEqual(want);
    figures.exact++;
    return 'ok';
  }
  const code = (body as { error?: { code?: string } } | null)?.error?.code ?? `status ${status}`;
  expect(allowed, `${what}: ${status} ${JSON.stringify(body)}`).toContain(code);
  figures.refused[code] = (figures.refused[code] ?? 0) + 1;
  return code;
}

/**
 * One damaged copy served: `damaged` written over `file`, then the catalog and the session's info
 * answer 200 and `pages` pages (the tail page first, then `next()`'s) are each exact or refused with
 * corrupt_range / repair_required; the pristine files are put back whatever happens.
 */
async function servedDamaged(p: Pristine, file: string, damaged: Buffer, what: string, pages: number, next: () => PageParams): Promise<void> {
  writeFileSync(file, damaged);
  try {
    const catalog = await get(server.url, '/v1/sessions');
    expect(catalog.status, `${what}: catalog`).toBe(200);
    const info = await get(server.url, `/v1/sessions/${p.id}`);
    expect(info.status, `${what}: info ${info.text}`).toBe(200);
    for (let k = 0; k < pages; k++) {
      const params = k === 0 ? {} : next();
      const a = await get(server.url, `/v1/sessions/${p.id}/page${query(params)}`);
      checkPage(p, params, a.status, a.body, ['corrupt_range', 'repair_required'], `${what}, page ${query(params)}`);
    }
  } finally {
    restore(p);
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-fault-corrupt-'));
  for (const f of Object.keys(FORMATS) as (keyof typeof FORMATS)[]) pristine.push(await makeSession(`c-${f}`, f));
  server = await startFaultServer(dir);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`corruption suite (seed ${SEED}${LONG ? ', long' : ''}): ${JSON.stringify(figures)}\n`);
});

describe('corruption fault suite (real server process)', () => {
  it(`${TRIALS} damaged files: every page exact or corrupt_range / repair_required, never a wrong 200, never a 5xx`, async () => {
    const r = prng(SEED);
    for (let t = 0; t < TRIALS; t++) {
      const p = r.pick(pristine);
      const fault = randomFault(p, r);
      const what = `seed ${SEED} trial ${t}: ${fault.kind} of ${p.id}`;
      figures.trials++;
      figures.faults[fault.kind.split(':')[0] as string] = (figures.faults[fault.kind.split(':')[0] as string] ?? 0) + 1;
      await servedDamaged(p, fault.file, fault.apply(p.files.get(fault.file) as Buffer), what, PAGES_PER_TRIAL, () => randomParams(p, r));
    }
    // The run must have exercised both outcomes.
    expect(figures.exact).toBeGreaterThan(0);
    expect(Object.keys(figures.refused).length).toBeGreaterThan(0);
  }, 600_000);

  it('the matrix: a bit flipped in every field of every file (first, middle and last record), and a byte flip, a truncation and garbage in every file, of JSONL, binary and mixed sessions', async () => {
    const r = prng(SEED + 2);
    const met = new Set<string>();
    const expected = new Set<string>();
    const last = (p: Pristine) => p.log.events.length - 1;
    // The tail page, and a page over the damaged frame when it is known (else a random one).
    const pageOver = (p: Pristine, frame: EntryLine | undefined): PageParams =>
      frame === undefined ? randomParams(p, r) : { throughSeq: Math.min(last(p), frame.seq + Math.max(frame.count, 1) - 1), maxMessages: 1 + r.int(3) };
    const trial = async (p: Pristine, file: string, cell: string, damaged: Buffer, frame?: EntryLine) => {
      const what = `seed ${SEED + 2} matrix ${cell} of ${p.id}`;
      figures.matrixTrials++;
      await servedDamaged(p, file, damaged, what, MATRIX_PAGES, () => pageOver(p, frame));
      met.add(`${p.id} ${cell}`);
    };
    for (const p of pristine) {
      for (const [n, c] of fieldCells(p).entries()) {
        expected.add(`${p.id} ${c.cell}`);
        // CI: one random bit of the field in one of its records (first, middle, last in turn);
        // long: one random bit in every byte of the field, in each of them.
        for (const [from, to, frame] of LONG ? c.at : [c.at[n % c.at.length] as [number, number, EntryLine | undefined]]) {
          const bytes = LONG ? Array.from({ length: to - from }, (_, i) => from + i) : [from + r.int(to - from)];
          for (const at of bytes) await trial(p, c.file, c.cell, flipBit(at, r)(p.files.get(c.file) as Buffer), frame);
        }
      }
      for (const [file, good] of p.files) {
        const name = file.slice(file.lastIndexOf('/') + 1).replace(p.id, '<id>');
        const at = r.int(good.length);
        const junk = Buffer.from(Array.from({ length: 1 + r.int(64) }, () => r.int(256)));
        const garbage = Buffer.from(good);
        junk.copy(garbage, at);
        const cases: [string, Buffer][] = [
          [`byte:${name}`, Object.assign(Buffer.from(good), { [at]: (good[at] as number) ^ (1 + r.int(255)) })],
          [`truncate:${name}`, good.subarray(0, r.int(good.length))],
          [`garbage:${name}`, garbage],
        ];
        for (const [cell, damaged] of cases) {
          expected.add(`${p.id} ${cell}`);
          await trial(p, file, cell, damaged);
        }
      }
    }
    figures.matrixCells = met.size;
    // Every file of every format, every field of each: the cells the issue lists.
    const names = [...expected].map((c) => c.split(' ')[1] as string);
    for (const want of ['log:spf2:length', 'log:spf2:crc', 'log:jsonl-frame:seq', 'log:jsonl-header:type', 'entries:offset', 'entries:length', 'entries:seq', 'entries:count', 'meta-sidecar:indexedLength', 'meta-sidecar:nextSeq', 'frames.idx:field0@0', 'frames.crc2:field3@12', 'frames.meta:field7@36']) {
      expect(names, want).toContain(want);
    }
    for (const id of pristine.map((p) => p.id)) expect([...expected].filter((c) => c.startsWith(`${id} `)).length, id).toBeGreaterThan(40);
    expect([...expected].filter((c) => !met.has(c))).toEqual([]);
  }, 1_800_000);

  it(`after repair and reindex every valid frame is still served (${REPAIRS} damaged sessions)`, async () => {
    const r = prng(SEED + 1);
    for (let n = 0; n < REPAIRS; n++) {
      const format = (Object.keys(FORMATS) as (keyof typeof FORMATS)[])[n % 3] as keyof typeof FORMATS;
      const p = await makeSession(`r${n}-${format}`, format);
      const fault = randomFault(p, r);
      await repairAndCheck(p, fault, `seed ${SEED + 1} repair ${n}: ${fault.kind} of ${p.id}`, n % 3);
    }
  }, 600_000);

  it(`the matrix repaired: a bit flipped in every header field of a middle frame of the log, ${LONG ? 'JSONL, binary and mixed sessions, each of the first 8 bytes of each field' : 'a mixed session'}: after repair and reindex every valid frame is still served`, async () => {
    const r = prng(SEED + 3);
    const cells = new Set<string>();
    for (const format of LONG ? (['jsonl', 'binary', 'mixed'] as const) : (['mixed'] as const)) {
      // The cells and their widths from one session; each case damages a fresh one (ids of one length, so the same offsets).
      const shape = await makeSession(`m000-${format}`, format);
      const logCells = (q: Pristine) => fieldCells(q).filter((c) => c.file.endsWith('.events') && c.cell.startsWith('log:') && !c.cell.includes('header'));
      // The middle record's field (first, middle, last: the middle one has valid frames on both sides).
      const middle = (c: Cell) => (c.at[1] ?? c.at[0]) as [number, number, EntryLine | undefined];
      let n = 0;
      for (const c of logCells(shape)) {
        const [from, to] = middle(c);
        for (const k of LONG ? Array.from({ length: Math.min(8, to - from) }, (_, i) => i) : [r.int(to - from)]) {
          const p = await makeSession(`m${String(++n).padStart(3, '0')}-${format}`, format);
          const mine = logCells(p).find((x) => x.cell === c.cell);
          expect(mine, c.cell).toBeDefined();
          const at = (middle(mine as Cell)[0] as number) + k;
          const file = (mine as Cell).file;
          const fault: Fault = { file, kind: `field:${c.cell}`, logRange: [at, at + 1], apply: flipBit(at, r) };
          await repairAndCheck(p, fault, `seed ${SEED + 3} matrix repair ${c.cell} byte ${k} of ${p.id}`, n % 3);
          cells.add(`${format} ${c.cell}`);
        }
      }
    }
    // Both frame formats' header fields were damaged and repaired.
    for (const want of ['log:spf2:length', 'log:spf2:crc', 'log:spf2:magic', 'log:jsonl-frame:seq', 'log:jsonl-frame:type']) expect([...cells].some((c) => c.endsWith(want)), want).toBe(true);
  }, 1_800_000);
});

/**
 * Damage `p` with `fault`, run `repair` and `reindex` as the CLI, then ask pages (one seq in
 * three from `phase` in CI, every seq in the long mode): every page that covers no damaged frame
 * is the reference page (repair never drops a valid frame); one that does is refused, or the
 * page of the log as it now stands (a JSONL frame whose change still parses, indexed again).
 */
async function repairAndCheck(p: Pristine, fault: Fault, what: string, phase: number): Promise<void> {
  writeFileSync(fault.file, fault.apply(p.files.get(fault.file) as Buffer));
  for (const cmd of ['repair', 'reindex']) {
    const run = spawnSync(process.execPath, [BIN, cmd, p.id, '--data', dir], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status === null ? 'killed' : 'ran', `${what}: ${cmd} ${run.stderr}`).toBe('ran');
    expect(run.stderr, `${what}: ${cmd} one line at most`).not.toMatch(/\n.*\n/);
  }
  figures.repairs++;
  // Seqs of the frames the fault touched (or cut away): only pages covering them may fail.
  const [lo, hi] = fault.logRange ?? [Infinity, Infinity];
  const damaged = p.entries.filter((e) => e.offset < hi && e.offset + e.length > lo);
  // A damaged header frame leaves nothing servable (repair cannot fix it).
  const headerHit = damaged.some((e) => e.offset === 0);
  const hit = (from: number, to: number) => headerHit || damaged.some((e) => e.seq < to && e.seq + Math.max(1, e.count) > from);
  const now = await readWholeLog(join(dir, 'sessions', `${p.id}.events`)).catch(() => null);
  // Every seq in the long mode, every third in CI (each page holds a message and what it groups).
  for (let s = phase; s < p.log.events.length; s += LONG ? 1 : 3) {
    const params = { throughSeq: s, maxMessages: 1 };
    const want = referencePage(p.log, p.id, params);
    const a = await get(server.url, `/v1/sessions/${p.id}/page${query(params)}`);
    figures.repairPages++;
    if (!hit(want.fromSeq, want.toSeq)) {
      expect(a.status, `${what}: page through ${s} covers no damaged frame: ${a.text}`).toBe(200);
      expect(a.body, `${what}: page through ${s}`).toEqual(want);
      continue;
    }
    expect(a.status, `${what}: page through ${s}: ${a.text}`).toBeLessThan(500);
    if (a.status === 200 && JSON.stringify(a.body) !== JSON.stringify(want)) {
      expect(now, what).not.toBeNull();
      expect(a.body, `${what}: page through ${s}`).toEqual(referencePage(now as ReferenceLog, p.id, { ...params, throughSeq: (a.body as Page).throughSeq }));
    }
  }
}

