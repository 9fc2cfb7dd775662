/**
 * The local backend's lease: an exclusive lock file holding the owner's
 * pid and, where the system tells it (/proc), the process's start time
 * (one writer per session, across processes). A lock whose pid is gone is
 * stale and taken over, so a crashed writer never blocks a session
 * forever; so is one whose pid is alive but started at another time: pids
 * are reused (32,768 of them by default on Linux), and a killed writer's
 * pid taken by an unrelated process blocked its session for as long as
 * that process lived (found by the crash suite's long mode).
 */
import { readFileSync, promises as fsp } from 'node:fs';
import { PagerError } from '../../core/errors.js';
import type { Lease } from '../backend.js';

/**
 * Whether process `pid` exists (EPERM: it does, owned by another user) and runs: a zombie (a
 * killed writer its parent has not reaped, which a parent that never waits, as a shell that
 * exec'd another program or a container's first process that does not reap, leaves for as long
 * as it lives) answers kill(pid, 0) but holds nothing: its session was busy until the parent went.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !zombie(pid);
}

/** Whether /proc says process `pid` has exited (state Z or X); false where /proc cannot tell. */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

/** When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22), or null where that cannot be read. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (field 2, in parentheses, which may hold spaces) start at field 3.
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start !== undefined && /^\d+$/.test(start) ? start : null;
  } catch {
    return null;
  }
}

/** The lock file's text: `<pid>` or `<pid> <start time>`. */
export function lockText(pid: number, start: string | null): string {
  return start === null ? `${pid}\n` : `${pid} ${start}\n`;
}

/** Whether the lock's owner still runs: its pid is alive and, when the lock names a start time that can be checked, started then. */
function ownerRuns(text: string): { pid: number; runs: boolean } | null {
  const [p, start] = text.trim().split(' ');
  const pid = Number.parseInt(p ?? '', 10);
  if (!Number.isSafeInteger(pid) || pid <= 0 || String(pid) !== p) return null;
  if (!processAlive(pid)) return { pid, runs: false };
  if (start === undefined) return { pid, runs: true };
  const now = processStart(pid);
  return { pid, runs: now === null || now === start };
}

export async function takePidLease(path: string, what: string): Promise<Lease> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await fsp.open(path, 'wx');
      try {
        await fh.writeFile(lockText(process.pid, processStart(process.pid)));
      } catch (err) {
        // A full disk (ENOSPC): the lock is not taken. Its file is ours and empty or cut short:
        // removed, and the handle closed (left open, one descriptor leaked at every refused
        // append until the process ran out of them).
        await fh.close().catch(() => undefined);
        await fsp.rm(path, { force: true });
        throw err;
      }
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
      const owner = ownerRuns(text);
      if (owner !== null && owner.runs) {
        const pid = owner.pid;
        throw new PagerError('session_busy', `${what} is being written by process ${pid}${pid === process.pid ? ' (this process)' : ''}`, { pid });
      }
      // Stale (owner gone, its pid now another process's, or a lock file cut short while being written): take it over.
      await fsp.rm(path, { force: true });
    }
  }
  throw new PagerError('session_busy', `${what}: could not take the writer lock`);
}
