import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Chromium {
  bin: string;
  args: string[];
}

/** The first Chromium on PATH: the headless shell, else the browser itself (in its headless mode). */
export function findChromium(): Chromium | null {
  for (const [bin, args] of [
    ['chromium-headless-shell', []],
    ['chromium', ['--headless=new']],
  ] as const) {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (r.error === undefined && r.status === 0) return { bin, args: [...args] };
  }
  return null;
}

/**
 * `url` opened in a headless Chromium with a profile of its own; `close()` ends the browser's
 * whole process group (its zygote, GPU, network and renderer processes too) and removes the profile.
 */
export function openInChromium(chromium: Chromium, url: string): { close(): Promise<void> } {
  const profile = mkdtempSync(join(tmpdir(), 'sp-chromium-'));
  const browser = spawn(chromium.bin, [...chromium.args, '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions', `--user-data-dir=${profile}`, url], { stdio: 'ignore', detached: true });
  return {
    async close() {
      try {
        process.kill(-(browser.pid as number), 'SIGKILL');
      } catch {
        // gone already
      }
      await new Promise((r) => setTimeout(r, 200));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
