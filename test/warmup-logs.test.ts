/**
 * The page workers' warm-up logs as the build writes them (src/workers/warmup-logs.ts): the
 * build's copies hold what jit-warmup.ts makes, and a copy that is not exactly what its header
 * says (another plan, cut short, a byte changed) is not used.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { binaryWork, jsonlWork, LOGS_PLAN, warmUpJit } from '../src/workers/jit-warmup.js';
import { loadWarmupLogs, writeWarmupLogs, type WarmupWork } from '../src/workers/warmup-logs.js';
import type { SliceTask } from '../src/workers/slice-protocol.js';

/** Everything a warm-up decodes: each log's bytes and each task's fields and records. */
function contents(works: readonly WarmupWork[]): unknown {
  const hex = (r: Uint8Array | undefined) => (r === undefined ? null : Buffer.from(r.buffer, r.byteOffset, r.length).toString('hex'));
  return works.map((w) => ({ bytes: w.bytes.toString('hex'), tasks: w.tasks.map((t) => ({ ...t, crcs: hex(t.crcs), meta: hex(t.meta) })) }));
}

describe('warm-up logs from the build', () => {
  it("the build's copies hold exactly the logs made afresh, as plain Uint8Array records shared as made", () => {
    const dist = resolve(import.meta.dirname, '..', 'dist', 'workers');
    const jsonl = loadWarmupLogs(join(dist, 'warmup-jsonl.bin'), LOGS_PLAN);
    const binary = loadWarmupLogs(join(dist, 'warmup-binary.bin'), LOGS_PLAN);
    expect(jsonl, 'dist/ is built by `npm test` (npm run build) before the tests run').not.toBeNull();
    expect(contents(jsonl as WarmupWork[])).toEqual(contents(jsonlWork()));
    expect(contents(binary as WarmupWork[])).toEqual(contents(binaryWork()));
    const t = (jsonl as WarmupWork[])[0]?.tasks as SliceTask[];
    expect(Object.getPrototypeOf(t[0]?.crcs)).toBe(Uint8Array.prototype);
    expect(t[0]?.crcs).toBe(t[1]?.crcs);
    expect(t[3]?.crcs).toBeUndefined();
  });

  it('a copy made from another plan, cut short, with a byte changed, or missing is not used', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sp-warmup-logs-'));
    try {
      const file = join(dir, 'logs.bin');
      writeWarmupLogs(file, jsonlWork(), LOGS_PLAN);
      expect(contents(loadWarmupLogs(file, LOGS_PLAN) as WarmupWork[])).toEqual(contents(jsonlWork()));
      expect(loadWarmupLogs(file, { ...LOGS_PLAN, maker: LOGS_PLAN.maker + 1 })).toBeNull();
      const whole = readFileSync(file);
      writeFileSync(file, whole.subarray(0, whole.length - 1));
      expect(loadWarmupLogs(file, LOGS_PLAN)).toBeNull();
      for (const at of [whole.length - 1, whole.length - 40_000]) {
        const changed = Buffer.from(whole);
        changed[at] = (changed[at] as number) ^ 0x20;
        writeFileSync(file, changed);
        expect(loadWarmupLogs(file, LOGS_PLAN)).toBeNull();
      }
      expect(loadWarmupLogs(join(dir, 'none.bin'), LOGS_PLAN)).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the warm-up decodes the logs it is given, and makes them when given none', async () => {
    const given = jsonlWork();
    const seen = new Set<Buffer>();
    await warmUpJit((_t, bytes) => void seen.add(bytes), () => null, 120_000, undefined, () => false, (kind) => (kind === 'jsonl' ? given : null));
    expect([...seen]).toEqual([given[0]?.bytes]);
    const made = new Set<Buffer>();
    await warmUpJit((_t, bytes) => void made.add(bytes), () => null, 120_000, undefined, () => false);
    expect(made.size).toBe(1);
    expect([...made][0]?.equals(given[0]?.bytes as Buffer)).toBe(true);
  }, 60_000);
});
