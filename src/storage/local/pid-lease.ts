/**
 * The local backend's lease: an exclusive lock file holding the owner's
 * pid (one writer per session, across processes). A lock whose pid is gone
 * is stale and taken over, so a crashed writer never blocks a session
 * forever.
 */
import { promises as fsp } from 'node:fs';
import { PagerError } from '../../main/core/errors.js';
import type { Lease } from '../backend.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function takePidLease(path: string, what: string): Promise<Lease> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await fsp.open(path, 'wx');
      await fh.writeFile(`${process.pid}\n`);
      await fh.close();
      let released = false;
      return {
        release: async () => {
          if (released) return;
          released = true;
          await fsp.rm(path, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = await fsp.readFile(path, 'utf8').catch(() => '');
      const pid = Number.parseInt(text, 10);
      if (Number.isSafeInteger(pid) && pid > 0 && alive(pid)) {
        throw new PagerError('session_busy', `${what} is being written by process ${pid}${pid === process.pid ? ' (this process)' : ''}`, { pid });
      }
      // Stale (owner gone, or a lock file cut short while being written): take it over.
      await fsp.rm(path, { force: true });
    }
  }
  throw new PagerError('session_busy', `${what}: could not take the writer lock`);
}
