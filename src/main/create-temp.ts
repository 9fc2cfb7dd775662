/**
 * Temp names of the header frame a create writes before it links the log
 * into place (session-writer.ts). They live beside the logs, start with a dot
 * and do not end in `.events`, so nothing lists them as sessions.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { sessionsDir } from './paths.js';

const SUFFIX = '.creating';

export function createTempPath(dataDir: string, id: string): string {
  return join(sessionsDir(dataDir), `.${id}.events.${process.pid}.${Date.now()}${SUFFIX}`);
}

/** Remove temp logs of earlier creates of `id` (call under the session's lock). */
export async function removeCreateTemps(dataDir: string, id: string): Promise<void> {
  const dir = sessionsDir(dataDir);
  const prefix = `.${id}.events.`;
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const n of names) {
    if (n.startsWith(prefix) && n.endsWith(SUFFIX) && /^\d+\.\d+$/.test(n.slice(prefix.length, -SUFFIX.length))) {
      await fsp.rm(join(dir, n), { force: true });
    }
  }
}

export async function existsPath(path: string): Promise<boolean> {
  try {
    await fsp.lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
