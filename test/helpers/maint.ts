/** Shared helpers of the maintenance tests: temp data dirs, file hashes, CLI capture, sidecar replay. */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeFrame } from '../../src/streams/frame-codec.js';
import { parseEntry } from '../../src/streams/entry-codec.js';
import { expandRow, validateRecord } from '../../src/core/chunk-codec.js';
import type { ChunkRow, EntryLine, SessionEvent } from '../../src/core/types.js';
import { isRowType } from '../../src/core/types.js';
import { main } from '../../src/main/cli.js';

export function tempDataDir(prefix = 'sp-maint-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every file under `dir` (recursively) with its sha256, and its mtime: what "read-only" must leave unchanged. */
export function snapshotTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, name.name);
      if (name.isDirectory()) {
        out[p + '/'] = 'dir';
        walk(p);
      } else {
        const st = statSync(p);
        out[p] = `${createHash('sha256').update(readFileSync(p)).digest('hex')} ${st.size} ${st.mtimeMs}`;
      }
    }
  };
  walk(dir);
  return out;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI in-process, capturing its output. */
export async function runCli(argv: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const ow = process.stdout.write.bind(process.stdout);
  const ew = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await main(argv);
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = ow;
    process.stderr.write = ew;
  }
}

export function readEntries(path: string): EntryLine[] {
  const text = readFileSync(path, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const e = parseEntry(l);
      if (typeof e === 'string') throw new Error(e);
      return e;
    });
}

/**
 * Serve every event through the entry sidecar: read each indexed frame at
 * its offset and length alone, decode it, check it holds what its entry
 * says. What a page path relies on, for the whole session.
 */
export function eventsViaSidecar(eventsPath: string, entriesPath: string): SessionEvent[] {
  const log = readFileSync(eventsPath);
  const out: SessionEvent[] = [];
  for (const e of readEntries(entriesPath)) {
    const frame = log.subarray(e.offset, e.offset + e.length);
    const f = decodeFrame(frame, 0, e.offset);
    if (!f.ok) throw new Error(f.message);
    if (f.length !== e.length) throw new Error(`frame length ${f.length} != entry ${e.length}`);
    if (e.kind === 'session') continue;
    const r = validateRecord(f.record);
    const events = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
    if (events[0]!.seq !== e.seq || events.length !== e.count || r.type !== e.kind) throw new Error(`entry at ${e.offset} disagrees with its frame`);
    out.push(...events);
  }
  return out;
}

/** A small conversation: per turn a user message, a run of text chunks, an assistant message with usage. */
export function conversation(fromSeq: number, turns: number, t0 = 1_000_000): SessionEvent[] {
  const out: SessionEvent[] = [];
  let seq = fromSeq;
  let time = t0 + fromSeq * 10;
  for (let turn = 0; turn < turns; turn++) {
    out.push({ type: 'user/message', seq: seq++, time: (time += 7), data: { text: `question ${seq}` } });
    for (let k = 0; k < 5; k++) {
      out.push({ type: 'assistant/chunk', seq: seq++, time: (time += 3), data: { turn, step: 0, chunk: { type: 'text-delta', index: 0, text: `w${k} ` } } });
    }
    out.push({ type: 'assistant/message', seq: seq++, time: (time += 5), data: { message: { source: { provider: 'p', model: 'm' } }, usage: { inputTokens: 10, outputTokens: 5 } } });
  }
  return out;
}

/** Create a session through the durable writer: `batches` appends of `turns` turns each. */
export async function makeSession(dataDir: string, id: string, format: 'jsonl' | 'binary', batches = 4, turns = 2): Promise<void> {
  const { SessionWriter } = await import('../../src/main/session-writer.js');
  const w = await SessionWriter.create(dataDir, id, { type: 'session', id, createdAt: 1_000_000, title: 'test' }, { format });
  try {
    for (let b = 0; b < batches; b++) await w.append(conversation(w.nextSeq, turns));
  } finally {
    await w.close();
  }
}
