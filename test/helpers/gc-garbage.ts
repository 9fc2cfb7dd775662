/**
 * The garbage a full collection finds, counted object by object by V8 itself.
 *
 * Why not `used_heap_size` before and after `gc()`: between two full
 * collections V8's used-bytes figure is its allocation accounting, not a
 * count of objects, and it moves by itself: read right after one collection
 * and again after the next, with nothing allocated between, it differed by
 * up to ~250 KB (old space; code space flips by ~220 KB), in either
 * direction. Against a bound of a few hundred KB that is a coin toss under
 * load (docs/benchmarks.md, "rel (tenth session, 2026-12-03)").
 *
 * V8's object statistics (`--trace-gc-object-stats`, in release builds) walk
 * the heap at each full collection after marking and print, per isolate and
 * collection, the bytes of every instance type found live and found dead:
 * the dead bytes are exactly what that collection frees.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CollectionCount {
  isolate: string;
  /** The isolate's own collection number. */
  id: number;
  liveBytes: number;
  deadBytes: number;
  /** Dead bytes by V8 instance type, to say what the garbage was when a bound fails. */
  deadByType: Record<string, number>;
  /** Lines read for it; a line another thread's output broke is skipped (see collectionCounts). */
  lines: number;
}

/** Every full collection in a `--trace-gc-object-stats` output, in the order they were printed. */
export function collectionCounts(trace: string): CollectionCount[] {
  const byKey = new Map<string, CollectionCount>();
  for (const line of trace.split('\n')) {
    // Each line names its isolate and collection, but V8 prints a line in several pieces, so
    // when threads collect at once a line may be broken by another's: such lines are skipped
    // (lastCollection checks the one it measures is whole).
    if (!line.startsWith('{') || !line.includes('"instance_type_data"')) continue;
    let o: { isolate: string; id: number; key: string; instance_type_name: string; overall: number };
    try {
      o = JSON.parse(line) as typeof o;
    } catch {
      continue;
    }
    const key = `${o.isolate}/${o.id}`;
    let c = byKey.get(key);
    if (c === undefined) {
      c = { isolate: o.isolate, id: o.id, liveBytes: 0, deadBytes: 0, deadByType: {}, lines: 0 };
      byKey.set(key, c);
    }
    c.lines++;
    if (o.key === 'live') c.liveBytes += o.overall;
    else if (o.key === 'dead' && o.overall > 0) {
      c.deadBytes += o.overall;
      c.deadByType[o.instance_type_name] = o.overall;
    }
  }
  return [...byKey.values()];
}

/**
 * Runs `code` (a CommonJS script with `gc` exposed and incremental marking off, as `serve`
 * runs V8) in a fresh process whose last collection must be one `gc()` on its main thread,
 * and returns what that collection found: the main thread's is the last collection printed, as
 * no other thread collects after it. Its earlier collections come with it. The process must
 * end by itself: process.exit() may lose the end of what V8 printed.
 */
export function lastCollection(code: string, args: string[] = []): { last: CollectionCount; earlier: CollectionCount[] } {
  // Into a file, not a pipe: Node makes a pipe on fd 1 non-blocking, and libc then drops
  // what V8 prints whenever the pipe is full (most of it, under vitest).
  const dir = mkdtempSync(join(tmpdir(), 'gc-garbage-'));
  let trace: string;
  try {
    const out = openSync(join(dir, 'trace'), 'w');
    try {
      execFileSync(process.execPath, ['--no-incremental-marking', '--expose-gc', '--trace-gc-object-stats', '-e', code, ...args], { stdio: ['ignore', out, 'pipe'] });
    } finally {
      closeSync(out);
    }
    trace = readFileSync(join(dir, 'trace'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const all = collectionCounts(trace);
  const last = all.at(-1);
  if (last === undefined) throw new Error('no collection printed: is --trace-gc-object-stats gone from this V8?');
  // Every collection prints the same list of instance types: the one measured must have all of its lines.
  const whole = Math.max(...all.map((c) => c.lines));
  if (last.lines !== whole) throw new Error(`the last collection's statistics were broken by another thread's (${last.lines} of ${whole} lines)`);
  return { last, earlier: all.filter((c) => c.isolate === last.isolate && c.id < last.id) };
}

/** The largest dead kinds, for a failure message. */
export function deadSummary(c: CollectionCount): string {
  return Object.entries(c.deadByType)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([t, n]) => `${t} ${n}`)
    .join(', ');
}
