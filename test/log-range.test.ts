/**
 * The worker-side read of a log range (storage/local/log-range.ts): a log named
 * by the incarnation the page's view stat'ed is read through a descriptor kept
 * open on that file, which reads exactly that file (not one that replaced it
 * since), and a log of another incarnation is opened afresh.
 */
import { mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeKeptLogs, keptLogCount, readLogRange } from '../src/storage/local/log-range.js';

let dir: string;
const ID = 'sess-a';
const log = () => join(dir, `${ID}.events`);
/** The incarnation as the local backend names it (local-backend.ts). */
const incarnationOf = (path: string) => {
  const s = statSync(path);
  return `${s.ino}:${s.birthtimeMs}`;
};
const read = (start: number, end: number, incarnation: string) => readLogRange(dir, ID, start, end, Buffer.alloc(end - start), incarnation).toString();

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sp-log-range-'));
});
afterEach(() => closeKeptLogs());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('log ranges read through a kept descriptor', () => {
  it('read the incarnation the view stat\'ed, even once a rename replaced the log; another incarnation is opened afresh', () => {
    writeFileSync(log(), 'first log: 0123456789');
    const first = incarnationOf(log());
    expect(read(11, 21, first)).toBe('0123456789');
    // Replaced by a rename (a repair): the path names another file now.
    const tmp = join(dir, 'next.tmp');
    writeFileSync(tmp, 'second log: abcdefghij');
    renameSync(tmp, log());
    const second = incarnationOf(log());
    expect(second).not.toBe(first);
    // A page planned from the first file's view reads the first file's bytes through the kept descriptor.
    expect(read(11, 21, first)).toBe('0123456789');
    // A page of the new view reads the new file.
    expect(read(12, 22, second)).toBe('abcdefghij');
    expect(keptLogCount()).toBe(1);
  });

  it('an unknown incarnation, or one the file at the path is not, opens the log for the read only', () => {
    writeFileSync(log(), 'some log bytes');
    expect(read(5, 8, '')).toBe('log');
    expect(read(5, 8, 'not-this-file')).toBe('log');
    expect(keptLogCount()).toBe(0);
  });

  it('reads fewer bytes at the log\'s end, and nothing for a range that is not whole numbers', () => {
    writeFileSync(log(), 'short');
    const inc = incarnationOf(log());
    expect(read(2, 10, inc).replace(/\0+$/, '')).toBe('ort');
    expect(readLogRange(dir, ID, 1.5, 4, Buffer.alloc(8), inc).length).toBe(0);
  });

  it('keeps a bounded number of descriptors, least recently opened closed first', () => {
    for (let i = 0; i < 20; i++) {
      const path = join(dir, `s${i}.events`);
      writeFileSync(path, `log ${i}`);
      expect(readLogRange(dir, `s${i}`, 0, `log ${i}`.length, Buffer.alloc(`log ${i}`.length), incarnationOf(path)).toString()).toBe(`log ${i}`);
    }
    expect(keptLogCount()).toBe(8);
  });
});
