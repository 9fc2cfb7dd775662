/**
 * The per-session change watcher followers share (storage/local/change-watch.ts): one
 * fs.watch per session for all its listeners, closed with the last one;
 * still watching after the file is replaced by rename; a file that appears
 * later, and what fs.watch misses, caught by the backstop poll.
 */
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChangeWatchers } from '../src/storage/local/change-watch.js';
import { until } from './server-helpers.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sp-watch-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A listener that counts its calls. */
function counter() {
  const c = { n: 0, fn: () => void c.n++ };
  return c;
}

describe('ChangeWatchers', () => {
  // A poll far longer than any test: what these see comes from fs.watch.
  const noPoll = 10 * 60_000;

  it('tells every listener of an append to the file, with one watcher per session closed with the last listener', async () => {
    const w = new ChangeWatchers(noPoll);
    const file = join(dir, 'a.entries.jsonl');
    writeFileSync(file, 'x\n');
    const a = counter();
    const b = counter();
    const stopA = w.watch('a', file, a.fn);
    const stopB = w.watch('a', file, b.fn);
    expect(w.size).toBe(1);
    appendFileSync(file, 'y\n');
    await until('both listeners told', () => a.n > 0 && b.n > 0, 5000);
    stopA();
    stopA(); // twice is harmless
    expect(w.size).toBe(1);
    const before = b.n;
    appendFileSync(file, 'z\n');
    await until('the remaining listener told', () => b.n > before, 5000);
    stopB();
    expect(w.size).toBe(0);
    const after = { a: a.n, b: b.n };
    appendFileSync(file, 'w\n');
    await new Promise((r) => setTimeout(r, 200));
    expect({ a: a.n, b: b.n }).toEqual(after);
    w.close();
  });

  it('keeps watching when the file is replaced by rename (the new file is the one watched)', async () => {
    const w = new ChangeWatchers(noPoll);
    const file = join(dir, 'r.entries.jsonl');
    writeFileSync(file, 'old\n');
    const c = counter();
    const stop = w.watch('r', file, c.fn);
    for (let round = 0; round < 3; round++) {
      const tmp = join(dir, `r.tmp${round}`);
      writeFileSync(tmp, `new ${round}\n`);
      let before = c.n;
      renameSync(tmp, file);
      await until(`the rename-over ${round} noticed`, () => c.n > before, 5000);
      // Appends to the replacement are seen: the watch moved to the new inode.
      await new Promise((r) => setTimeout(r, 20));
      before = c.n;
      appendFileSync(file, `more ${round}\n`);
      await until(`an append to replacement ${round} noticed`, () => c.n > before, 5000);
    }
    stop();
    expect(w.size).toBe(0);
    w.close();
  });

  it('notices a file that did not exist yet, and missed changes, by its backstop poll', async () => {
    const w = new ChangeWatchers(50);
    const file = join(dir, 'late.entries.jsonl');
    const c = counter();
    const stop = w.watch('late', file, c.fn);
    writeFileSync(file, 'first\n');
    await until('the new file noticed by the poll', () => c.n > 0, 5000);
    const before = c.n;
    appendFileSync(file, 'second\n');
    await until('an append to it noticed', () => c.n > before, 5000);
    stop();
    w.close();
  });

  it('a listener that throws does not keep the others from being told; close() stops everything', async () => {
    const w = new ChangeWatchers(noPoll);
    const file = join(dir, 't.entries.jsonl');
    writeFileSync(file, 'x\n');
    const c = counter();
    w.watch('t', file, () => {
      throw new Error('listener failure');
    });
    w.watch('t', file, c.fn);
    appendFileSync(file, 'y\n');
    await until('the second listener told', () => c.n > 0, 5000);
    w.close();
    expect(w.size).toBe(0);
    // Watching after close is a no-op.
    w.watch('t', file, c.fn)();
    expect(w.size).toBe(0);
  });
});
