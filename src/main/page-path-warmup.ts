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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSession } from './gen/generate.js';
import type { PageParams } from './core/types.js';

export interface WarmupStore {
  pageBuffer(id: string, params: PageParams): Promise<unknown>;
  close(): Promise<void>;
}

const ID = 'warmup';
/** A short conversation ending in a 20,000-delta in-flight message: ~0.4 MB of frames, so the tail page is cut into slices. */
const SESSION = { id: ID, events: 30_000, tailEvents: 20_000, seed: 5 };
/** Tail pages, short pages, older pages and a pinned cut: single- and multi-slice plans. */
const PAGES: PageParams[] = [{}, { maxMessages: 3 }, { maxMessages: 2, beforeSeq: 9_000 }, { throughSeq: 20_000, maxMessages: 4 }, { maxBytes: 50_000 }, {}];

export async function warmUpPagePath(open: (dataDir: string) => Promise<WarmupStore>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'session-pager-warmup-'));
  let store: WarmupStore | null = null;
  try {
    await generateSession(dir, SESSION);
    store = await open(dir);
    for (let round = 0; round < 2; round++) for (const params of PAGES) await store.pageBuffer(ID, params);
  } finally {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  }
}
