/**
 * Damage one byte inside a frame of a session written by the tests, the
 * way a failing disk would, and say which frame it was.
 */
import { promises as fsp } from 'node:fs';
import { sessionPaths } from '../../src/main/paths.js';

export interface DamagedFrame {
  seq: number;
  count: number;
  offset: number;
  length: number;
}

/** Flip the bits of byte 20 of the first frame at or after `minSeq` longer than 40 bytes. */
export async function damageFrame(dataDir: string, id: string, minSeq: number): Promise<DamagedFrame> {
  const p = sessionPaths(dataDir, id);
  const entries = (await fsp.readFile(p.entries, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as DamagedFrame);
  const victim = entries.find((e) => e.seq >= minSeq && e.count > 0 && e.length > 40);
  if (victim === undefined) throw new Error(`no frame to damage at or after seq ${minSeq}`);
  const fh = await fsp.open(p.events, 'r+');
  try {
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, victim.offset + 20);
    b[0] = (b[0] as number) ^ 0xff;
    await fh.write(b, 0, 1, victim.offset + 20);
  } finally {
    await fh.close();
  }
  return victim;
}
