/**
 * Warm-up of the whole page path, once per process before it serves: write
 * a small generated session (a real writer's frames, checksum projection and
 * frame index) into a temporary directory and serve a few of its pages
 * through the same store code and worker pool that real pages take.
 *
 * Why, on top of the workers' own JIT warm-up (workers/jit-warmup.ts): that
 * one runs the decoder on synthetic tasks, so every object the real path
 * builds around it (resolved parameters, plans from the frame index, tasks
 * with a chain-seed checksum record, two slices to merge) first appeared on
 * the first real page, and code optimized for the synthetic shapes was
 * deoptimized and compiled again there, on CPUs the decode needed.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { PageParams } from '../core/types.js';

export interface WarmupStore {
  pageBuffer(id: string, params: PageParams): Promise<unknown>;
  close(): Promise<void>;
}

/** A short conversation ending in a 20,000-delta in-flight message: ~0.4 MB of frames, so the tail page is cut into slices. */
const SESSION = { events: 30_000, tailEvents: 20_000, seed: 5 };
/** What `gen --id-prefix warmup --seed 5` names its first session. */
const ID = `warmup-${SESSION.seed}-0`;
/** The executable (src/main/warmup and dist/main/warmup both sit three levels below the package root). */
const BIN = fileURLToPath(new URL('../../../bin/session-pager.js', import.meta.url));

/**
 * Write the session with `session-pager gen` in a child process: generating
 * it here grew the serving thread's heap for good (peak RSS after the 5M tail
 * page 174-178 MB in process, 165-172 MB this way), and peak RSS is a target
 * of its own. The child's memory is its own and is returned.
 */
async function writeSession(dir: string): Promise<void> {
  const args = ['gen', '--data', dir, '--events', String(SESSION.events), '--tail-events', String(SESSION.tailEvents), '--seed', String(SESSION.seed), '--id-prefix', 'warmup'];
  await promisify(execFile)(process.execPath, [BIN, ...args]);
}

/** Tail pages, short pages, older pages and a pinned cut: single- and multi-slice plans. */
function pages(events: number): PageParams[] {
  return [{}, { maxMessages: 3 }, { maxMessages: 2, beforeSeq: Math.floor(events * 0.3) }, { throughSeq: Math.floor(events * 0.6), maxMessages: 4 }, { maxBytes: 50_000 }, {}];
}

export async function warmUpPagePath(open: (dataDir: string) => Promise<WarmupStore>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'session-pager-warmup-'));
  let store: WarmupStore | null = null;
  try {
    await writeSession(dir);
    store = await open(dir);
    for (let round = 0; round < 2; round++) for (const params of pages(SESSION.events)) await store.pageBuffer(ID, params);
  } finally {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  }
}
