/**
 * The page workers' warm-up logs as the build writes them (src/workers/warmup-logs.ts): the
 * build's copies hold what jit-warmup.ts makes, and a copy that is not exactly what its header
 * says (another plan, cut short, a byte changed) is not used.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { binaryWork, jsonlWork, LOGS_PLAN, warmUpJit } from '../src/workers/jit-warmup.js';
import { decodeWarmupLogs, encodeWarmupLogs, type WarmupWork } from '../src/workers/warmup-logs.js';
import type { SliceTask } from '../src/workers/slice-protocol.js';

/** Everything a warm-up decodes: each log's bytes and each task's fields and records. */
function contents(works: readonly WarmupWork[]): unknown {
  const hex = (r: Uint8Array | undefined) => (r === undefined ? null : Buffer.from(r.buffer, r.byteOffset, r.length).toString('hex'));
  return works.map((w) => ({ bytes: w.bytes.toString('hex'), tasks: w.tasks.map((t) => ({ ...t, crcs: hex(t.crcs), meta: hex(t.meta) })) }));
}

describe('warm-up logs from the build', () => {
  it("the build's copies hold exactly the logs made afresh, as plain Uint8Array records shared as made", () => {
    const dist = resolve(import.meta.dirname, '..', 'dist', 'workers');
    const jsonl = decodeWarmupLogs(readFileSync(join(dist, 'warmup-jsonl.bin')), LOGS_PLAN);
    const binary = decodeWarmupLogs(readFileSync(join(dist, 'warmup-binary.bin')), LOGS_PLAN);
    expect(jsonl, 'dist/ is built by `npm test` (npm run build) before the tests run').not.toBeNull();
    expect(contents(jsonl as WarmupWork[])).toEqual(contents(jsonlWork()));
    expect(contents(binary as WarmupWork[])).toEqual(contents(binaryWork()));
    const t = (jsonl as WarmupWork[])[0]?.tasks as SliceTask[];
    expect(Object.getPrototypeOf(t[0]?.crcs)).toBe(Uint8Array.prototype);
    expect(t[0]?.crcs).toBe(t[1]?.crcs);
    expect(t[3]?.crcs).toBeUndefined();
  });

  it('a copy made from another plan, cut short, with a byte changed, or missing is not used', () => {
    const whole = encodeWarmupLogs(jsonlWork(), LOGS_PLAN);
    expect(contents(decodeWarmupLogs(whole, LOGS_PLAN) as WarmupWork[])).toEqual(contents(jsonlWork()));
    expect(decodeWarmupLogs(whole, { ...LOGS_PLAN, maker: LOGS_PLAN.maker + 1 })).toBeNull();
    expect(decodeWarmupLogs(whole.subarray(0, whole.length - 1), LOGS_PLAN)).toBeNull();
    for (const at of [whole.length - 1, whole.length - 40_000]) {
      const changed = Buffer.from(whole);
      changed[at] = (changed[at] as number) ^ 0x20;
      expect(decodeWarmupLogs(changed, LOGS_PLAN)).toBeNull();
    }
    expect(decodeWarmupLogs(undefined, LOGS_PLAN)).toBeNull();
  });

  it("the pool reads the build's copies for its workers, which check out", async () => {
    const { readWarmupLogs } = await import('../src/main/worker-pool.js');
    const logs = readWarmupLogs();
    expect(contents(decodeWarmupLogs(logs.jsonl, LOGS_PLAN) as WarmupWork[])).toEqual(contents(jsonlWork()));
    expect(contents(decodeWarmupLogs(logs.binary, LOGS_PLAN) as WarmupWork[])).toEqual(contents(binaryWork()));
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
