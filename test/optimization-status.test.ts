/**
 * workers/optimization-status.ts reaches V8's %GetOptimizationStatus by setting
 * --allow-natives-syntax for the one function it makes, then clearing it. A
 * process started with the flag (tests and probes run so) must keep it: the
 * flag is process-wide, and clearing it made their own `%` calls parsed later
 * fail. Each case in a fresh process (V8's flags are per process).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');

/** Whether a `%` call parses after the module has asked V8 for a function's tier. */
const parsesAfter = `
  const { tierOf } = await import(${JSON.stringify(`${dist}/workers/optimization-status.js`)});
  const f = () => 1;
  f();
  const tier = tierOf(f);
  let parses = true;
  try { new Function('return %GetOptimizationStatus(() => 1)')(); } catch { parses = false; }
  process.stdout.write(JSON.stringify({ tier, parses }));`;

const run = (nodeArgs: string[]): unknown => JSON.parse(execFileSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', parsesAfter], { encoding: 'utf8' }));

describe('V8 optimization status', () => {
  it('leaves --allow-natives-syntax set in a process started with it', () => {
    expect(existsSync(`${dist}/workers/optimization-status.js`), 'dist/ is built (tsc) before the tests run').toBe(true);
    expect(run(['--allow-natives-syntax'])).toEqual({ tier: 'not-optimized', parses: true });
  }, 60_000);

  it('clears the flag again in a process started without it', () => {
    expect(run([])).toEqual({ tier: 'not-optimized', parses: false });
  }, 60_000);
});
