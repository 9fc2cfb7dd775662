/**
 * The page workers' synthetic warm-up logs (jit-warmup.ts jsonlWork, binaryWork) as bytes,
 * written once by `npm run build` (scripts/warmup-snapshot.mjs) beside this module in dist/,
 * read by the pool that starts the workers (main/worker-pool.ts) and handed to each in its
 * workerData: a page worker reads no file of its own (test/layering). A worker decodes ~0.3 MB
 * instead of generating ~4,000 events and packing and
 * encoding them. Making them cost each worker ~50-150 ms of a start's wall on two shared cores,
 * and V8's helper threads ~100 ms compiling the generator's and packer's code (pushEvent,
 * textBlock, run, ...), which no real page runs and the worker's closing collection threw away
 * (docs/benchmarks.md, "ready (tenth session)").
 *
 * Derived data, so checked before use: the file must be of this VERSION, made from the plan
 * the caller passes (the constants the logs are generated from), whole, and its payload's
 * SHA-256 must be the one its header states. Anything else (missing, another plan, cut short,
 * damaged) is not used and the caller makes the logs as before. Their frames are then decoded
 * by the warm-up through the same checks as any slice's (checksums, row metadata, seqs).
 *
 * Layout: u32le length of a JSON header `{ v, plan, sha256, works: [{ bytes, crcs, meta,
 * tasks }] }` (lengths in bytes; `crcs` and `meta` each a list of the distinct records the
 * tasks share, a task naming them by index or -1), the header, then per work its log's
 * bytes and each distinct record, in the header's order.
 */
import { createHash } from 'node:crypto';
import { sliceTask, type SliceTask } from './slice-protocol.js';

const VERSION = 1;

/** A log and the tasks that decode it (jit-warmup.ts). */
export interface WarmupWork {
  bytes: Buffer;
  tasks: SliceTask[];
}

/** A task's start, end, firstSeq, endSeq, fromSeq, toSeq. */
type TaskFields = [number, number, number, number, number, number];

interface Header {
  v: number;
  plan: unknown;
  sha256: string;
  works: { bytes: number; crcs: number[]; meta: number[]; tasks: { at: TaskFields; crcs: number; meta: number }[] }[];
}

/** The files `npm run build` writes each set of logs to, beside this module in dist/workers/ (the pool reads them there). */
export const WARMUP_LOG_FILES = { jsonl: 'warmup-jsonl.bin', binary: 'warmup-binary.bin' } as const;

/** `works`, made from `plan`, as the bytes of a logs file (the build writes them whole: a temporary file renamed). */
export function encodeWarmupLogs(works: readonly WarmupWork[], plan: unknown): Buffer {
  const parts: Buffer[] = [];
  const header: Header = { v: VERSION, plan, sha256: '', works: [] };
  for (const w of works) {
    const crcs: Uint8Array[] = [];
    const meta: Uint8Array[] = [];
    const index = (list: Uint8Array[], r: Uint8Array | undefined) => {
      if (r === undefined) return -1;
      const i = list.indexOf(r);
      return i >= 0 ? i : list.push(r) - 1;
    };
    const tasks = w.tasks.map((t) => ({ at: [t.start, t.end, t.firstSeq, t.endSeq, t.fromSeq, t.toSeq] as TaskFields, crcs: index(crcs, t.crcs), meta: index(meta, t.meta) }));
    for (const t of w.tasks) if (t.source !== '' || t.session !== 'warmup' || t.bytes !== undefined) throw new Error('a warm-up task names its log only by its bytes');
    header.works.push({ bytes: w.bytes.length, crcs: crcs.map((r) => r.length), meta: meta.map((r) => r.length), tasks });
    parts.push(w.bytes, ...crcs.map((r) => Buffer.from(r.buffer, r.byteOffset, r.length)), ...meta.map((r) => Buffer.from(r.buffer, r.byteOffset, r.length)));
  }
  const payload = Buffer.concat(parts);
  header.sha256 = createHash('sha256').update(payload).digest('hex');
  const head = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(head.length);
  return Buffer.concat([len, head, payload]);
}

/**
 * The logs in `file` (a logs file's bytes, undefined when the pool found none) when they were
 * made from `plan`, whole and as their header's digest says; else null (the caller makes them).
 * Records come back as plain Uint8Arrays, as a structured clone delivers a real task's, each its
 * own copy; every task as `sliceTask` makes one.
 */
export function decodeWarmupLogs(file: Uint8Array | undefined, plan: unknown): WarmupWork[] | null {
  if (file === undefined) return null;
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.length);
  try {
    if (bytes.length < 4) return null;
    const end = 4 + bytes.readUInt32LE(0);
    if (end > bytes.length) return null;
    const header = JSON.parse(bytes.toString('utf8', 4, end)) as Header;
    if (header.v !== VERSION || JSON.stringify(header.plan) !== JSON.stringify(plan) || !Array.isArray(header.works)) return null;
    if (!header.works.every((w) => w.tasks.every((t) => Array.isArray(t.at) && t.at.length === 6))) return null;
    const payload = bytes.subarray(end);
    let size = 0;
    for (const w of header.works) size += w.bytes + w.crcs.reduce((a, b) => a + b, 0) + w.meta.reduce((a, b) => a + b, 0);
    if (size !== payload.length || createHash('sha256').update(payload).digest('hex') !== header.sha256) return null;
    let at = 0;
    const take = (n: number) => {
      const out = new Uint8Array(n);
      out.set(payload.subarray(at, at + n));
      at += n;
      return out;
    };
    return header.works.map((w) => {
      const log = Buffer.from(take(w.bytes).buffer);
      const crcs = w.crcs.map(take);
      const meta = w.meta.map(take);
      const tasks = w.tasks.map(({ at: f, crcs: c, meta: m }) => {
        const t = sliceTask('', 'warmup', f[0], f[1], f[2], f[3], f[4], f[5]);
        t.crcs = c < 0 ? undefined : crcs[c];
        t.meta = m < 0 ? undefined : meta[m];
        if ((c >= 0 && t.crcs === undefined) || (m >= 0 && t.meta === undefined)) throw new Error('a task names a record the file does not hold');
        return t;
      });
      return { bytes: log, tasks };
    });
  } catch {
    return null;
  }
}
