/**
 * The demo corpus behind `npm start` (`serve --demo`): a few small sessions
 * and one long session that ends in a huge in-flight streaming answer, made
 * with the synthetic generator on first start. A marker file records a
 * finished corpus; an interrupted generation is redone from scratch (only
 * the demo's own session ids are touched).
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { generateSession } from './gen/generate.js';
import { sessionPaths } from './paths.js';
import type { FrameEncoding } from '../streams/frame-codec.js';
import { DEMO_DATA_DIR } from './demo-dir.js';

export { DEMO_DATA_DIR };

const MARKER = '.demo-complete';
const TOKEN_FILE = '.demo-token';

export interface DemoSessionPlan {
  id: string;
  events: number;
  tailEvents: number;
  format: FrameEncoding;
  seed: number;
}

/**
 * About 1.06M events, 100k of them the streaming tail of demo-long: measured
 * at ~10 s of first-start generation on a 2-core machine.
 */
export const DEMO_PLAN: readonly DemoSessionPlan[] = [
  { id: 'demo-short', events: 2_000, tailEvents: 0, format: 'jsonl', seed: 11 },
  { id: 'demo-medium', events: 20_000, tailEvents: 0, format: 'binary', seed: 12 },
  { id: 'demo-streaming', events: 40_000, tailEvents: 5_000, format: 'jsonl', seed: 13 },
  { id: 'demo-long', events: 1_000_000, tailEvents: 100_000, format: 'jsonl', seed: 14 },
];

export interface DemoCorpus {
  /** False when an existing complete corpus was reused. */
  created: boolean;
  sessions: { id: string; events: number; bytes: number }[];
  ms: number;
}

async function exists(p: string): Promise<boolean> {
  return fsp.access(p).then(
    () => true,
    () => false,
  );
}

async function removeSession(dataDir: string, id: string): Promise<void> {
  const p = sessionPaths(dataDir, id);
  await Promise.all([p.events, p.meta, p.entries, p.lock].map((f) => fsp.rm(f, { force: true })));
  await fsp.rm(p.projections, { recursive: true, force: true });
}

/** Make sure the demo corpus exists in `dataDir`; generate it if not. */
export async function ensureDemoCorpus(
  dataDir: string,
  opts: { onProgress?: (id: string, done: number, total: number) => void; replace?: boolean; plan?: readonly DemoSessionPlan[] } = {},
): Promise<DemoCorpus> {
  const onProgress = opts.onProgress;
  const marker = join(dataDir, MARKER);
  if (await exists(marker)) {
    const saved = JSON.parse(await fsp.readFile(marker, 'utf8')) as { sessions: DemoCorpus['sessions'] };
    return { created: false, sessions: saved.sessions, ms: 0 };
  }
  const t0 = Date.now();
  await fsp.mkdir(dataDir, { recursive: true });
  const sessions: DemoCorpus['sessions'] = [];
  for (const [k, s] of (opts.plan ?? DEMO_PLAN).entries()) {
    if (await exists(sessionPaths(dataDir, s.id).events)) {
      // Left over from an interrupted first start: redo it. In a data dir that
      // is not the demo's own, a session of that name is the user's: keep it.
      if (opts.replace === false) continue;
      await removeSession(dataDir, s.id);
    }
    const r = await generateSession(dataDir, {
      id: s.id,
      events: s.events,
      tailEvents: s.tailEvents,
      seed: s.seed,
      stream: k,
      format: s.format,
      onProgress: (n) => onProgress?.(s.id, n, s.events),
    });
    sessions.push({ id: r.id, events: r.events, bytes: r.bytes });
  }
  const tmp = `${marker}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify({ v: 1, createdAt: Date.now(), sessions }) + '\n');
  await fsp.rename(tmp, marker);
  return { created: true, sessions, ms: Date.now() - t0 };
}

/** The demo's token: kept in the data dir (mode 0600) so restarts reuse it. */
export async function demoToken(dataDir: string): Promise<string> {
  const file = join(dataDir, TOKEN_FILE);
  try {
    const t = (await fsp.readFile(file, 'utf8')).trim();
    if (t.length >= 16) return t;
  } catch {
    // none yet
  }
  const token = randomBytes(24).toString('base64url');
  await fsp.mkdir(dataDir, { recursive: true });
  await fsp.writeFile(file, token + '\n', { mode: 0o600 });
  return token;
}
