/**
 * A session volume's manifest (docs/s3-layout.md): the whole state of one
 * session on an S3 store, written as numbered objects `manifest/<n>` with
 * `If-None-Match: *`, so exactly one writer makes each number and a writer
 * that did not read the latest one cannot make the next (its PUT fails:
 * the epoch of the winner fences it). Every member (the log, the sidecars,
 * the projections) is a list of extents in logical order: byte ranges of
 * sealed segments, of tail objects, or small inline pieces; every object
 * named has its check (where its check table is, and that table's CRC), so
 * a reader verifies what it fetches against what the writer wrote; and the
 * manifest's own bytes carry a CRC (its inline pieces are checked by it).
 * Pure: bytes in, checked structures out; extents cut and joined without I/O.
 */
import { crc32 } from 'node:zlib';
import type { MemberName } from './remote-names.js';
import type { ObjectCheck } from './segment-file.js';
import { checkSparse, type SparseIndex } from './sparse-index.js';

/** Bytes of a member: `len` bytes at `at` of remote object `o` (seg/..., tail/...), or inline (base64 `d`). */
export type Extent = { o: string; at: number; len: number } | { d: string; len: number };

export interface MemberState {
  size: number;
  mtimeMs: number;
  /** Incarnation: set when the member is made anew. */
  born: string;
  /** Changes with every write (with the epoch that wrote it, it is the stat's version). */
  w: string;
  extents: Extent[];
}

/** Who holds the session's write lease. */
export interface WriterId {
  /** Random per backend instance. */
  id: string;
  host: string;
  pid: number;
  /** When that process started (pid-lease.ts `processStart`; absent where it cannot be told, and in older writers' manifests): a pid reused by another process is not the writer. */
  start?: string;
  /** The writer's local tail folder (a restart on the same host finds its unpublished tail there). */
  tail: string;
}

export interface Manifest {
  v: 1;
  session: string;
  n: number;
  /** Bumped by every writer that takes the session over; segment and tail names carry it. */
  epoch: number;
  /** The lease holder, null once released (a clean shutdown). */
  writer: WriterId | null;
  /** The holder renews (writes a manifest) at least this often; one older than twice this is stale. */
  leaseMs: number;
  /** Wall clock of the writer when it wrote this manifest. */
  time: number;
  /** Serial of the writer's next segment or tail object name. */
  serial: number;
  members: Partial<Record<MemberName, MemberState>>;
  /** The check of every object the members' extents name (and only those). */
  checks: Record<string, ObjectCheck>;
  /** Where a page's frame index records lie, by seq (sparse-index.ts; a hint, absent in manifests of older writers). */
  sparse?: SparseIndex;
}

const MEMBER_RE = /^(events|entries|meta|p\/[A-Za-z0-9][A-Za-z0-9._-]{0,127})$/;
const OBJ_RE = /^(seg\/\d+-\d+\.seg|tail\/\d+-\d+\.tail)$/;

function fail(why: string): never {
  throw new Error(`invalid manifest: ${why}`);
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;

function checkExtent(e: unknown): Extent {
  if (typeof e !== 'object' || e === null) fail('extent is not an object');
  const x = e as Record<string, unknown>;
  if (!isCount(x.len) || x.len === 0) fail('extent length');
  if ('d' in x) {
    if (typeof x.d !== 'string' || Buffer.from(x.d, 'base64').length !== x.len) fail('inline extent');
    return { d: x.d, len: x.len };
  }
  if (typeof x.o !== 'string' || !OBJ_RE.test(x.o) || !isCount(x.at)) fail('remote extent');
  return { o: x.o, at: x.at, len: x.len };
}

function checkMember(m: unknown): MemberState {
  if (typeof m !== 'object' || m === null) fail('member is not an object');
  const x = m as Record<string, unknown>;
  if (!isCount(x.size) || typeof x.mtimeMs !== 'number' || typeof x.born !== 'string' || typeof x.w !== 'string' || !Array.isArray(x.extents)) fail('member fields');
  const extents = x.extents.map(checkExtent);
  if (extents.reduce((a, e) => a + e.len, 0) !== x.size) fail('member extents do not add up to its size');
  return { size: x.size, mtimeMs: x.mtimeMs, born: x.born, w: x.w, extents };
}

function checkWriter(w: unknown): WriterId | null {
  if (w === null) return null;
  const x = w as Record<string, unknown>;
  if (typeof x !== 'object' || typeof x.id !== 'string' || typeof x.host !== 'string' || !isCount(x.pid) || typeof x.tail !== 'string') fail('writer');
  if (x.start !== undefined && (typeof x.start !== 'string' || !/^\d{1,20}$/.test(x.start))) fail('writer start time');
  return { id: x.id, host: x.host, pid: x.pid, ...(x.start === undefined ? {} : { start: x.start }), tail: x.tail };
}

function checkCheck(c: unknown): ObjectCheck {
  if (!Array.isArray(c) || c.length < 4 || !c.every(isCount)) fail('object check');
  const [chunk, at, crc, ...starts] = c as number[];
  if ((chunk as number) < 1 || (crc as number) > 0xffffffff || starts[0] !== 0 || starts.some((x, i) => x >= (at as number) || (i > 0 && x <= (starts[i - 1] as number)))) fail('object check');
  return { chunk: chunk as number, at: at as number, crc: crc as number, starts };
}

/** The manifest's JSON (checks as `[chunk, at, crc, ...starts]`), a newline, and the CRC-32 of the JSON's bytes in decimal. */
export function encodeManifest(m: Manifest): Buffer {
  const checks = Object.fromEntries(Object.entries(m.checks).map(([o, c]) => [o, [c.chunk, c.at, c.crc, ...c.starts]]));
  const json = Buffer.from(JSON.stringify({ ...m, checks }), 'utf8');
  return Buffer.concat([json, Buffer.from(`\n${crc32(json)}`, 'latin1')]);
}

/** A manifest read back, checked field by field (its CRC; `n` must be the number it was stored under). */
export function decodeManifest(bytes: Buffer, n: number, session: string): Manifest {
  const nl = bytes.lastIndexOf(0x0a);
  const sum = nl === -1 ? '' : bytes.toString('latin1', nl + 1);
  if (!/^\d{1,10}$/.test(sum)) fail('no CRC line');
  const json = bytes.subarray(0, nl);
  if (crc32(json) !== Number(sum)) fail('fails its CRC (damaged)');
  let j: unknown;
  try {
    j = JSON.parse(json.toString('utf8'));
  } catch {
    fail('not JSON');
  }
  const x = j as Record<string, unknown>;
  if (typeof x !== 'object' || x === null || x.v !== 1) fail('version');
  if (x.session !== session) fail(`session ${JSON.stringify(x.session)}, expected ${JSON.stringify(session)}`);
  if (x.n !== n) fail(`number ${String(x.n)} stored as ${n}`);
  if (!isCount(x.epoch) || x.epoch < 1 || !isCount(x.leaseMs) || typeof x.time !== 'number' || !isCount(x.serial)) fail('epoch, lease, time or serial');
  if (typeof x.members !== 'object' || x.members === null) fail('members');
  const members: Partial<Record<MemberName, MemberState>> = {};
  for (const [name, m] of Object.entries(x.members as Record<string, unknown>)) {
    if (!MEMBER_RE.test(name)) fail(`member name ${JSON.stringify(name)}`);
    members[name as MemberName] = checkMember(m);
  }
  if (typeof x.checks !== 'object' || x.checks === null || Array.isArray(x.checks)) fail('checks');
  const checks: Record<string, ObjectCheck> = {};
  for (const [o, c] of Object.entries(x.checks as Record<string, unknown>)) {
    if (!OBJ_RE.test(o)) fail(`check of ${JSON.stringify(o)}`);
    checks[o] = checkCheck(c);
  }
  const named = objectsNamed({ members });
  for (const o of named) if (checks[o] === undefined) fail(`no check for ${o}`);
  for (const o of Object.keys(checks)) if (!named.has(o)) fail(`check for ${o}, which no extent names`);
  for (const [name, s] of Object.entries(members)) for (const e of s?.extents ?? []) if ('o' in e && e.at + e.len > (checks[e.o] as ObjectCheck).at) fail(`extent of ${name} past its object's checked bytes`);
  const out: Manifest = { v: 1, session, n, epoch: x.epoch, writer: checkWriter(x.writer), leaseMs: x.leaseMs, time: x.time, serial: x.serial, members, checks };
  if (x.sparse !== undefined) out.sparse = checkSparse(x.sparse);
  return out;
}

/** The extents covering bytes [0, at) of a member (the last one cut short). */
export function extentsBefore(extents: readonly Extent[], at: number): Extent[] {
  const out: Extent[] = [];
  let pos = 0;
  for (const e of extents) {
    if (pos >= at) break;
    const take = Math.min(e.len, at - pos);
    out.push(take === e.len ? e : cutExtent(e, 0, take));
    pos += e.len;
  }
  return out;
}

/** Bytes [from, from + len) of one extent as an extent. */
function cutExtent(e: Extent, from: number, len: number): Extent {
  if ('d' in e) return { d: Buffer.from(e.d, 'base64').subarray(from, from + len).toString('base64'), len };
  return { o: e.o, at: e.at + from, len };
}

/** The extents covering bytes [from, size) of a member. */
export function extentsFrom(extents: readonly Extent[], from: number): Extent[] {
  const out: Extent[] = [];
  let pos = 0;
  for (const e of extents) {
    const end = pos + e.len;
    if (end > from) out.push(pos >= from ? e : cutExtent(e, from - pos, end - from));
    pos = end;
  }
  return out;
}

/** How far a member's leading extents are sealed segments (the part no tail object holds). */
export function sealedEnd(extents: readonly Extent[]): number {
  let pos = 0;
  for (const e of extents) {
    if ('d' in e || !e.o.startsWith('seg/')) break;
    pos += e.len;
  }
  return pos;
}

/**
 * One piece of a ranged read: `len` bytes at `at` of remote object `o`
 * (within the extent [lo, hi) of that object the member owns), or of an
 * inline extent's bytes; `pos`: where it goes in the result.
 */
export type Piece = { o: string; at: number; len: number; pos: number; lo: number; hi: number } | { data: Buffer; pos: number };

/**
 * The pieces bytes [start, end) of a member are read from, in order.
 * Adjacent pieces of one object are joined, so a read crossing extents of
 * the same segment is one ranged GET.
 */
export function piecesOf(extents: readonly Extent[], start: number, end: number): Piece[] {
  const out: Piece[] = [];
  let pos = 0;
  for (const e of extents) {
    const eEnd = pos + e.len;
    if (eEnd > start && pos < end) {
      const from = Math.max(start, pos) - pos;
      const to = Math.min(end, eEnd) - pos;
      if ('d' in e) out.push({ data: Buffer.from(e.d, 'base64').subarray(from, to), pos: pos + from - start });
      else {
        const last = out[out.length - 1];
        if (last !== undefined && 'o' in last && last.o === e.o && last.at + last.len === e.at + from) {
          last.len += to - from;
          last.hi = Math.max(last.hi, e.at + e.len);
        } else out.push({ o: e.o, at: e.at + from, len: to - from, pos: pos + from - start, lo: e.at, hi: e.at + e.len });
      }
    }
    pos = eEnd;
    if (pos >= end) break;
  }
  return out;
}

/** Remote objects any member's extents name (what a manifest keeps alive). */
export function objectsNamed(m: Pick<Manifest, 'members'>): Set<string> {
  const out = new Set<string>();
  for (const s of Object.values(m.members)) for (const e of s?.extents ?? []) if ('o' in e) out.add(e.o);
  return out;
}
