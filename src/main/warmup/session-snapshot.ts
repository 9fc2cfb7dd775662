/**
 * The page-path warm-up's session (page-path-warmup.ts) as bytes, written
 * once by `npm run build` (scripts/warmup-snapshot.mjs) into
 * dist/main/warmup/, so a starting server loads ~330 KB instead of
 * generating 12,000 events and writing them through the writer: that took
 * ~0.3-0.6 s of the main thread's CPU on every start, on the path to ready
 * (docs/benchmarks.md, "Issue 12 start-up: the warm-up's session built at
 * build time").
 *
 * The file holds every object the writer made (log, entry sidecar, metadata,
 * projections), each as the writer left it: the store checks them as it
 * checks any session's (the log's stat no longer matches the metadata's
 * fingerprint, so opening it proves the last indexed frame, as for a log
 * touched since it was indexed). A file that is missing, was made for
 * another session plan, or does not parse is not used: the caller
 * generates the session as before.
 *
 * Layout: u32le length of a JSON header `{ v, plan, objects: [[key, bytes], ...] }`,
 * the header, then each object's bytes in the header's order.
 */
import { fileURLToPath } from 'node:url';
import type { StorageBackend } from '../../storage/backend.js';
import { LocalBackend } from '../../storage/local/local-backend.js';

const VERSION = 1;

interface Header {
  v: number;
  plan: unknown;
  objects: [string, number][];
}

/** Where `npm run build` puts the snapshot: beside this module in dist/. */
export const SNAPSHOT_PATH = fileURLToPath(new URL('./page-path-session.bin', import.meta.url));

/**
 * The same objects as files of a data directory, also written by the build:
 * a starting server serves one page of the session from here, read only,
 * through the local backend (page-path-warmup.ts, warmUpLocalPages).
 */
export const SNAPSHOT_DIR = fileURLToPath(new URL('./page-path-data', import.meta.url));
/** In SNAPSHOT_DIR: the plan its session was made from (a directory from another build's plan is not used). */
const PLAN_FILE = 'plan.json';

/** The file itself, through the storage seam (keys are paths). */
const files = new LocalBackend();

/** Every object under `prefix`, depth first, with its bytes. */
export async function objectsUnder(storage: StorageBackend, prefix: string): Promise<[string, Buffer][]> {
  const out: [string, Buffer][] = [];
  for (const name of (await storage.list(prefix)).sort()) {
    const key = `${prefix}/${name}`;
    const bytes = await storage.readAll(key);
    // No object by that name: a folder (list names the first level of deeper keys).
    if (bytes === null) out.push(...(await objectsUnder(storage, key)));
    else out.push([key, bytes]);
  }
  return out;
}

/** Write the objects under `prefix` of `storage`, made from `plan`, to `file`. */
export async function writeSnapshot(file: string, storage: StorageBackend, prefix: string, plan: unknown): Promise<void> {
  const objects = await objectsUnder(storage, prefix);
  const header: Header = { v: VERSION, plan, objects: objects.map(([k, b]) => [k, b.length]) };
  const head = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(head.length);
  await files.replace(file, Buffer.concat([len, head, ...objects.map(([, b]) => b)]));
}

/**
 * Put the snapshot's objects into `storage` (an empty one) when `file` holds
 * one made from `plan`; false when it does not (missing, another plan, cut
 * short, not a snapshot), and nothing was put.
 */
export async function loadSnapshot(file: string, storage: StorageBackend, plan: unknown): Promise<boolean> {
  let bytes: Buffer | null;
  try {
    bytes = await files.readAll(file);
  } catch {
    return false;
  }
  if (bytes === null) return false;
  let header: Header;
  try {
    if (bytes.length < 4) return false;
    const end = 4 + bytes.readUInt32LE(0);
    header = JSON.parse(bytes.toString('utf8', 4, end)) as Header;
    if (header.v !== VERSION || JSON.stringify(header.plan) !== JSON.stringify(plan) || !Array.isArray(header.objects)) return false;
    let at = end;
    for (const [, n] of header.objects) at += n;
    if (at !== bytes.length) return false;
  } catch {
    return false;
  }
  let at = 4 + bytes.readUInt32LE(0);
  for (const [key, n] of header.objects) {
    await storage.createExclusive(key, bytes.subarray(at, at + n));
    at += n;
  }
  return true;
}

/** Write the objects under `prefix` of `storage`, made from `plan`, as the files of data directory `dir` (emptied first). */
export async function writeSnapshotDir(dir: string, storage: StorageBackend, prefix: string, plan: unknown): Promise<void> {
  const target = new LocalBackend(dir);
  await target.removeAll(prefix);
  for (const [key, bytes] of await objectsUnder(storage, prefix)) await target.replace(key, bytes);
  await target.replace(PLAN_FILE, Buffer.from(JSON.stringify(plan)));
}

/** Whether `dir` holds the snapshot's objects made from `plan` (writeSnapshotDir): only reads. */
export async function snapshotDirFor(dir: string, plan: unknown): Promise<boolean> {
  try {
    const made = await new LocalBackend(dir).readAll(PLAN_FILE);
    return made !== null && made.toString('utf8') === JSON.stringify(plan);
  } catch {
    return false;
  }
}
