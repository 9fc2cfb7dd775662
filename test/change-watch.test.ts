/**
 * The per-session change watcher followers share (storage/local/change-watch.ts): one
 * fs.watch per session for all its listeners, closed with the last one;
 * still watching after the file is replaced by rename; a file that appears
 * later, and what fs.watch misses, caught by the backstop poll; a watcher
 * outliving its last listener (the linger) is the one the next listener gets,
 * closes on its own, and keeps no process alive.
 */
import { spawn } from 'node:child_process';
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

  it('keeps a watcher its linger after the last listener: the next listener gets it (and is told), then it closes on its own', async () => {
    const w = new ChangeWatchers(noPoll, 300);
    const file = join(dir, 'l.entries.jsonl');
    writeFileSync(file, 'x\n');
    w.watch('l', file, counter().fn)();
    expect({ size: w.size, lingering: w.lingering }).toEqual({ size: 0, lingering: 1 });
    // A listener that comes back within the linger: the same watcher, told of what is appended.
    const back = counter();
    const stop = w.watch('l', file, back.fn);
    expect({ size: w.size, lingering: w.lingering }).toEqual({ size: 1, lingering: 0 });
    appendFileSync(file, 'y\n');
    await until('the returning listener told', () => back.n > 0, 5000);
    stop();
    expect(w.lingering).toBe(1);
    await until('the lingering watcher closed', () => w.lingering === 0, 5000);
    // Closed for real: a listener now gets a new watcher that works.
    const fresh = counter();
    const stopFresh = w.watch('l', file, fresh.fn);
    appendFileSync(file, 'z\n');
    await until('the new watcher told', () => fresh.n > 0, 5000);
    stopFresh();
    w.close();
    expect({ size: w.size, lingering: w.lingering }).toEqual({ size: 0, lingering: 0 });
  });

  it('a lingering watcher keeps no process alive (a library follower exits when its last follow ends)', async () => {
    const file = join(dir, 'p.entries.jsonl');
    writeFileSync(file, 'x\n');
    // The built module in a process of its own: a listener that keeps the process alive, removed; the
    // watcher then lingers 10 minutes, and the process must exit by itself long before (the test's timeout).
    const mod = new URL('../dist/storage/local/change-watch.js', import.meta.url).href;
    const script = `const { ChangeWatchers } = await import(${JSON.stringify(mod)});
      const w = new ChangeWatchers(60_000, 600_000);
      const stop = w.watch('p', ${JSON.stringify(file)}, () => {}, { keepAlive: true });
      setTimeout(() => { stop(); console.log('lingering ' + w.lingering); }, 50);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise((res) => child.on('exit', res));
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: 'lingering 1' });
  }, 30_000);
});
