/**
 * `import`: bring an existing dsh session log in as a session, streamed with
 * bounded memory (one input chunk, its decompressed output and the longest
 * line), validated, written in the normal log format and indexed.
 *
 * - Input: a dsh `session.jsonl`, or the same Zstandard-framed (one zstd
 *   frame per append batch; detected by the zstd magic, not the name),
 *   decompressed as a stream with fzstd. Or one JSON document whose top
 *   level is an array of events (an export of `SessionEvent[]`; told apart
 *   by its first non-blank byte `[`), read element by element with
 *   stream-json (maintenance/json-array.ts): its first element is the header
 *   when its type is "session", else the header is made up as
 *   `{"type":"session","version":0,"id":<id>,"createdAt":<first event's time>}`.
 * - Validation: the first line is a `session` header; every other line is a
 *   storage record (`validateRecord`: event, or packed row checked exactly),
 *   seqs contiguous from 0, no second header. Blank lines are skipped. The
 *   first failure stops the import and names the line.
 * - Records are stored as they are, one frame each: no re-packing, so the
 *   log keeps dsh's append-batch boundaries and, in `jsonl` format, every
 *   line byte for byte (an imported plain dsh log is byte-identical to its
 *   source when it ends with a newline and has no blank lines). `binary`
 *   re-encodes each record as an SPF2 frame, and a JSON array's records are
 *   written as JSON lines, both as the session writer encodes them.
 * - Atomic appearance, on any backend (storage/replacement.ts): log and
 *   entry sidecar are built as replacements (local files: temp files,
 *   fsynced); the log is then put in place exclusively (failing if the id
 *   appeared meanwhile; local: linked), the entry sidecar next, the metadata
 *   written last. A crash in between leaves a log whose sidecars are
 *   missing: repair_required, and `reindex` rebuilds them; never a half log.
 * - The input is a local file, read in chunks through `localFiles`.
 * - Interrupted (`signal`, SIGINT/SIGTERM in the CLI): checked between input
 *   chunks, so the temp files are removed and the lease released on the way
 *   out; once the log is being placed, the import completes.
 */
import { basename } from 'node:path';
import { Decompress } from 'fzstd';
import { entryFor } from '../../streams/batch-encoder.js';
import { expandRow, recordSpan, validateRecord } from '../../core/chunk-codec.js';
import { jsonNestingExceeds, nestingMessage, valueNestingExceeds } from '../../core/nesting.js';
import { PagerError } from '../../core/errors.js';
import { emptySummary, foldEvent, type SessionSummary } from '../../core/summary.js';
import type { ChunkRow, SessionEvent, SessionHeader, StorageRecord } from '../../core/types.js';
import { isRowType } from '../../core/types.js';
import { encodeEntry } from '../../streams/entry-codec.js';
import { MAX_FRAME_BYTES, RECORD_SCHEMA, type FrameEncoding } from '../../streams/frame-codec.js';
import { isExists, type Replacement } from '../../storage/backend.js';
import { sessionKeys } from '../../storage/layout.js';
import { localFiles, storageAt, type StorageTarget } from '../../storage/local/local-backend.js';
import { openReplacement } from '../../storage/replacement.js';
import { writeMeta, type SessionMeta } from '../meta-file.js';
import { assertSessionId } from '../paths.js';
import { sessionExists } from './reindex.js';
import { BufferedWriter, LineSplitter } from './io.js';
import { jsonErrorReason, quoteInput, quoteValue, safeLine } from '../../core/excerpt.js';
import { forEachArrayElement } from './json-array.js';
import { ProjectionFiles } from './projection-files.js';
import { writerFrame } from './checksum-build.js';

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
const READ_CHUNK = 64 * 1024;
const BRACE = 0x7b;
const NEWLINE = Buffer.from('\n');

export interface ImportOptions {
  id?: string;
  format?: FrameEncoding;
  /** Input bytes consumed so far and the input's size. */
  onProgress?: (consumed: number, total: number) => void;
  /** Aborting it stops the import before the log is placed, leaving nothing behind. */
  signal?: AbortSignal;
}

export interface ImportResult {
  id: string;
  source: 'jsonl' | 'zstd';
  /** What the (decompressed) input held: JSON lines, or one JSON array of events. */
  document: 'jsonl' | 'json-array';
  format: FrameEncoding;
  events: number;
  frames: number;
  logBytes: number;
  /** Every line was kept byte for byte (jsonl format only). */
  verbatim: boolean;
  meta: SessionMeta;
}

/** The file's basename without `.zstd`/`.zst`, then without `.jsonl` or `.json`. */
export function defaultImportId(file: string): string {
  let name = basename(file);
  for (const ext of ['.zstd', '.zst']) if (name.endsWith(ext)) name = name.slice(0, -ext.length);
  for (const ext of ['.jsonl', '.json']) if (name.endsWith(ext)) name = name.slice(0, -ext.length);
  return name;
}

/** Where in the input: `line N` (JSONL) or `element N` (0-based, of the JSON array). */
type Place = { line: number } | { element: number };

class ImportError extends PagerError {
  constructor(file: string, at: Place, message: string) {
    super('invalid_request', `${basename(file)} ${'line' in at ? `line ${at.line}` : `element ${at.element}`}: ${message}`, at);
  }
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const BRACKET = 0x5b;

/**
 * The input's chunks, and its first byte that is not blank (a UTF-8 byte
 * order mark skipped): `[` means one JSON array document.
 */
async function peekFirstByte(chunks: AsyncGenerator<Uint8Array>): Promise<{ first: number | null; chunks: AsyncGenerator<Uint8Array> }> {
  const seen: Uint8Array[] = [];
  let first: number | null = null;
  let pos = 0;
  let bom = 0;
  scan: for (;;) {
    const n = await chunks.next();
    if (n.done) break;
    const b = n.value;
    seen.push(b);
    for (let i = 0; i < b.length; i++) {
      const c = b[i] as number;
      if (pos + i === bom && bom < BOM.length && c === BOM[bom]) bom++;
      else if (!WHITESPACE.has(c)) {
        first = c;
        break scan;
      }
    }
    pos += b.length;
  }
  async function* all(): AsyncGenerator<Uint8Array> {
    yield* seen;
    yield* chunks;
  }
  return { first, chunks: all() };
}

/** The input's first bytes name Zstandard (its magic), read through `localFiles` (the input is a local file). */
async function isZstd(file: string): Promise<boolean> {
  let b: Buffer | null;
  try {
    b = await localFiles.read(file, 0, 4);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EISDIR') throw new PagerError('invalid_request', `${file} is not a file`);
    throw new PagerError('invalid_request', `${file}: ${(err as Error).message}`);
  }
  if (b === null) throw new PagerError('invalid_request', `${file}: no such file`);
  return b.length === 4 && b.equals(ZSTD_MAGIC);
}

/** How long reading runs between turns of the event loop (local reads are synchronous: a signal must be seen). */
const YIELD_MS = 20;

/** The input file's bytes, READ_CHUNK at a time; checks `signal` between chunks. */
async function* fileChunks(file: string, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const reader = await localFiles.openReader(file);
  try {
    let turn = Date.now();
    for (let pos = 0; pos < reader.size; ) {
      if (Date.now() - turn > YIELD_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        turn = Date.now();
      }
      signal?.throwIfAborted();
      const chunk = await reader.read(pos, Math.min(READ_CHUNK, reader.size - pos));
      if (chunk.length === 0) break;
      pos += chunk.length;
      yield chunk;
    }
  } finally {
    await reader.close();
  }
}

/** Decompressed (or plain) chunks of the file, read as a stream. */
async function* inputChunks(file: string, zstd: boolean, onRead: (n: number) => void, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  const stream = fileChunks(file, signal);
  if (!zstd) {
    for await (const chunk of stream) {
      onRead(chunk.length);
      yield chunk;
    }
    return;
  }
  let out: Uint8Array[] = [];
  const dec = new Decompress((data) => {
    out.push(data);
  });
  const drain = (): Uint8Array[] => {
    const o = out;
    out = [];
    return o;
  };
  for await (const chunk of stream) {
    onRead(chunk.length);
    try {
      dec.push(chunk);
    } catch (err) {
      throw new PagerError('invalid_request', `${basename(file)}: invalid Zstandard data: ${(err as Error).message}`);
    }
    // fzstd hands out views of its window: copy before the next push reuses it.
    for (const d of drain()) yield Buffer.from(d);
  }
  try {
    dec.push(new Uint8Array(0), true);
  } catch (err) {
    throw new PagerError('invalid_request', `${basename(file)}: Zstandard stream is cut short: ${(err as Error).message}`);
  }
  for (const d of drain()) yield Buffer.from(d);
}

/** `target`: the store's backend, or a local data directory. `file`: a local file. */
export async function importSession(target: StorageTarget, file: string, opts: ImportOptions = {}): Promise<ImportResult> {
  const storage = storageAt(target);
  const id = assertSessionId(opts.id ?? defaultImportId(file));
  const format = opts.format ?? 'jsonl';
  const st = await localFiles.stat(file).catch((err: Error) => {
    throw new PagerError('invalid_request', `${file}: ${err.message}`);
  });
  if (st === null) throw new PagerError('invalid_request', `${file}: no such file`);
  const zstd = await isZstd(file);
  const paths = sessionKeys(id);
  if (await sessionExists(paths, storage)) throw new PagerError('session_exists', `session ${id} already exists`);
  const lock = await storage.lease(paths.lock, `session ${id}`);
  let logOut: Replacement | null = null;
  let entriesOut: Replacement | null = null;
  let placed = false;
  // The frame index and, where the frames allow, checksums (projection-files.ts): the fast path, as for a session the writer created.
  let projections: ProjectionFiles | null = null;
  let projected = false;
  try {
    logOut = await openReplacement(storage, paths.events, true);
    entriesOut = await openReplacement(storage, paths.entries, false);
    projections = await ProjectionFiles.create(storage, paths, true);
    const log = new BufferedWriter(logOut);
    const entries = new BufferedWriter(entriesOut);
    let consumed = 0;
    let lineNo = 0;
    // Filled in by onLine (a closure: kept in an object so flow analysis sees the updates).
    const acc: { header: SessionHeader | null; summary: SessionSummary | null; lastTime: number | null } = { header: null, summary: null, lastTime: null };
    let expected = 0;
    let frames = 0;
    let verbatim = format === 'jsonl';

    /**
     * One record of the input, in order: the header first, then storage
     * records with contiguous seqs. `line`: its JSONL bytes, kept as the
     * frame when they are a valid JSONL frame on their own (else re-encoded).
     */
    const addRecord = async (value: unknown, at: Place, line: Buffer | null): Promise<void> => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ImportError(file, at, 'is not a JSON object');
      const keep = format === 'jsonl' && line !== null && line[0] === BRACE;
      if (!keep) verbatim = false;
      // A record re-encoded anyway is encoded as the writer encodes it (a packable delta event in
      // chunkEvent's layout, whatever its key order was), so its frame gets checksum records and takes
      // the fast path (checksum-build.ts); kept lines get them only when they already are the writer's.
      const frameOf = (rec: unknown): Buffer => (keep ? Buffer.concat([line as Buffer, NEWLINE]) : writerFrame(rec, format));
      if (acc.header === null) {
        const h = value as Record<string, unknown>;
        if (h.type !== 'session') throw new ImportError(file, at, `the first line must be the session header (type "session"), got type ${quoteValue(h.type)}`);
        acc.header = h as SessionHeader;
        acc.summary = emptySummary(acc.header);
        const frame = frameOf(acc.header);
        await log.write(frame);
        const entry = { v: 1 as const, seq: 0, count: 0, offset: 0, length: frame.length, kind: 'session', schema: RECORD_SCHEMA };
        await entries.write(encodeEntry(entry));
        await projections?.frame(frame, 0, acc.header, frame[0] === BRACE ? 'jsonl' : 'binary', entry);
        frames++;
        return;
      }
      let r: StorageRecord;
      try {
        r = validateRecord(value);
      } catch (err) {
        throw new ImportError(file, at, (err as Error).message);
      }
      if (r.type === 'session') throw new ImportError(file, at, 'a second session header');
      const span = recordSpan(r);
      if (span.seq !== expected) throw new ImportError(file, at, `${isRowType(r.type) ? 'row' : 'event'} starts at seq ${span.seq}, expected ${expected} (seqs must be contiguous from 0)`);
      const frame = frameOf(r);
      const offset = log.length;
      await log.write(frame);
      const entry = entryFor(r, offset, frame.length, RECORD_SCHEMA);
      await entries.write(encodeEntry(entry));
      await projections?.frame(frame, offset, r, frame[0] === BRACE ? 'jsonl' : 'binary', entry);
      frames++;
      expected += span.count;
      const events: SessionEvent[] = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
      for (const e of events) foldEvent(acc.summary as SessionSummary, e);
      acc.lastTime = (events[events.length - 1] as SessionEvent).time;
    };

    const onLine = async (line: Buffer, terminated: boolean): Promise<void> => {
      lineNo++;
      const text = line.toString('utf8');
      if (text.trim() === '') {
        verbatim = false;
        return;
      }
      if (!terminated) verbatim = false;
      // Before anything recursive meets it (core/nesting.ts).
      if (jsonNestingExceeds(line)) throw new ImportError(file, { line: lineNo }, nestingMessage('the record'));
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        throw new ImportError(file, { line: lineNo }, `invalid JSON: ${jsonErrorReason(err)} (the line starts ${quoteInput(line)})`);
      }
      await addRecord(value, { line: lineNo }, line);
    };

    /** An array element: an event (or a row); a first element that is not a header gets one made up. */
    const onElement = async (value: unknown, element: number): Promise<void> => {
      // Built without recursion (json-array.ts); checked before anything recursive meets it.
      if (valueNestingExceeds(value)) throw new ImportError(file, { element }, nestingMessage('the record'));
      if (element === 0) {
        const v = value as Record<string, unknown> | null;
        if (v === null || typeof v !== 'object' || v.type !== 'session') {
          const t = v !== null && typeof v === 'object' ? v.time : undefined;
          const createdAt = Number.isSafeInteger(t) ? (t as number) : Math.floor(st.mtimeMs);
          await addRecord({ type: 'session', version: 0, id, createdAt }, { element }, null);
        }
      }
      await addRecord(value, { element }, null);
    };

    const read = await peekFirstByte(
      inputChunks(
        file,
        zstd,
        (n) => {
          consumed += n;
          opts.onProgress?.(consumed, st.size);
        },
        opts.signal,
      ),
    );
    const document = read.first === BRACKET ? 'json-array' : 'jsonl';
    if (document === 'json-array') {
      verbatim = false;
      try {
        await forEachArrayElement(read.chunks, onElement, opts.signal);
      } catch (err) {
        if (err instanceof PagerError || opts.signal?.aborted) throw err;
        throw new PagerError('invalid_request', `${basename(file)}: invalid JSON array document: ${safeLine((err as Error).message)}`);
      }
    } else {
      const splitter = new LineSplitter(MAX_FRAME_BYTES);
      for await (const chunk of read.chunks) {
        let lines: Buffer[];
        try {
          lines = splitter.push(chunk);
        } catch (err) {
          throw new ImportError(file, { line: lineNo + 1 }, (err as Error).message);
        }
        for (const line of lines) await onLine(line, true);
      }
      const rest = splitter.end();
      if (rest !== null) await onLine(rest, false);
    }
    opts.signal?.throwIfAborted();
    const h = acc.header;
    if (h === null) throw new PagerError('invalid_request', `${basename(file)}: no session header (the ${document === 'json-array' ? 'array' : 'file'} is empty)`);

    await log.flush();
    await entries.flush();
    // Place the log exclusively: it fails if the id appeared meanwhile (nothing is overwritten).
    try {
      await logOut.commit();
    } catch (err) {
      if (isExists(err)) throw new PagerError('session_exists', `session ${id} already exists`);
      throw err;
    }
    placed = true;
    await entriesOut.commit();
    const lst = await storage.stat(paths.events);
    if (lst === null) throw new Error(`session ${id}: the imported log is gone from the store`);
    const createdAt = Number.isSafeInteger(h.createdAt) ? (h.createdAt as number) : Math.floor(st.mtimeMs);
    const meta = {
      v: 1,
      id,
      header: h,
      format,
      fingerprint: { size: lst.size, mtimeMs: lst.mtimeMs },
      nextSeq: expected,
      eventCount: expected,
      frameCount: frames,
      indexedLength: log.length,
      entriesLength: entries.length,
      createdAt,
      updatedAt: acc.lastTime ?? createdAt,
      ...(acc.summary as SessionSummary),
      issues: [],
    } as SessionMeta;
    await writeMeta(storage, paths.meta, meta);
    await projections.finish();
    projected = true;
    return { id, source: zstd ? 'zstd' : 'jsonl', document, format, events: expected, frames, logBytes: log.length, verbatim, meta };
  } finally {
    if (!placed) await logOut?.abort();
    // After its commit, a no-op.
    await entriesOut?.abort();
    if (!projected) await projections?.abandon();
    await lock.release();
  }
}
