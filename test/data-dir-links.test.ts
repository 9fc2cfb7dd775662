/**
 * Symbolic links planted in the data directory never have the server write
 * outside it (docs/reliability.md, "What is promised"): a session's log that
 * is a link to a file elsewhere was adopted by `repair` and then appended
 * through, and a projection folder that is a link had its files written and
 * removed where it pointed (found by hand). Writes refuse them (ELOOP); the
 * files they name stay as they were.
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/main/session-writer.js';

const header = { type: 'session', version: 1, id: 's', createdAt: 1700000000000 };
const ev = (seq: number) => ({ type: 'custom/x', seq, time: 1700000000000 + seq, data: { n: seq } });

let root: string;
let dir: string;
let outside: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sp-links-'));
  dir = join(root, 'data');
  outside = join(root, 'outside');
  mkdirSync(outside);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

async function session(): Promise<void> {
  const w = await SessionWriter.create(dir, 's', header);
  await w.append([ev(0)]);
  await w.close();
}

const tree = (d: string) => Object.fromEntries(readdirSync(d).map((n) => [n, readFileSync(join(d, n)).toString('base64')]));

describe('links in the data directory', () => {
  it("a session's log that is a link to a file outside is never written through", async () => {
    await session();
    // The log moved out and linked back in.
    renameSync(join(dir, 'sessions', 's.events'), join(outside, 's.events'));
    symlinkSync(join(outside, 's.events'), join(dir, 'sessions', 's.events'));
    const before = tree(outside);
    // It was opened and the append written into the file outside.
    await expect(SessionWriter.open(dir, 's').then((w) => w.append([ev(1)]).finally(() => w.close()))).rejects.toMatchObject({ code: 'ELOOP' });
    expect(tree(outside)).toEqual(before);
  });

  it("a projection folder that is a link is neither written nor emptied where it points, and appends go on", async () => {
    await session();
    const projections = join(dir, 'sessions', 'index', 's');
    cpSync(projections, join(outside, 's'), { recursive: true });
    rmSync(projections, { recursive: true });
    symlinkSync(join(outside, 's'), projections);
    writeFileSync(join(outside, 's', 'unrelated.txt'), 'kept');
    const before = tree(join(outside, 's'));
    const w = await SessionWriter.open(dir, 's');
    await w.append([ev(1), ev(2)]);
    await w.close();
    // Its files were appended to, or removed as a stale projection.
    expect(tree(join(outside, 's'))).toEqual(before);
    const again = await SessionWriter.open(dir, 's');
    expect(await again.append([ev(3)])).toMatchObject({ nextSeq: 4 });
    await again.close();
  });
});
