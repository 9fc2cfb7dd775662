/**
 * bench/others-cpu.mjs, how the HTTP lanes of bench/peer-ab.mjs see the rest of this shared machine:
 * /proc/stat's busy time is read as the kernel writes it (idle and iowait left out), the lane's
 * own processes are taken off it, and a lane the rest of the machine disturbed is measured again,
 * a bounded number of times, the last try kept. No timing: the measures are given.
 */
import { describe, expect, it } from 'vitest';

const { busyMsOf, othersCores, untilQuiet } = (await import('../bench/others-cpu.mjs')) as unknown as {
  busyMsOf: (stat: string) => number;
  othersCores: (busyMs: number, ownMs: number, wallMs: number) => number;
  untilQuiet: <T extends { othersCores: number }>(measure: () => T, maxOthers: number, retries: number, onRetry?: (x: T, retry: number) => void) => T;
};

describe('bench/others-cpu.mjs', () => {
  it('reads busy time from /proc/stat: user, nice, system, irq, softirq and steal, not idle nor iowait', () => {
    // user nice system idle iowait irq softirq steal guest guest_nice (clock ticks of 10 ms)
    const stat = 'cpu  100 20 30 5000 700 4 6 2 0 0\ncpu0 50 10 15 2500 350 2 3 1 0 0\n';
    expect(busyMsOf(stat)).toBe((100 + 20 + 30 + 4 + 6 + 2) * 10);
  });

  it('takes the lane’s own CPU off the machine’s busy time, never below 0', () => {
    expect(othersCores(9000, 7000, 4000)).toBe(0.5);
    expect(othersCores(6000, 7000, 4000)).toBe(0);
  });

  it('measures a disturbed lane again until one is quiet, and keeps that one', () => {
    const tries = [{ othersCores: 1.03, okPerSec: 303 }, { othersCores: 0.9, okPerSec: 320 }, { othersCores: 0.1, okPerSec: 564 }];
    let i = 0;
    const heard: number[] = [];
    const x = untilQuiet(() => tries[i++] as (typeof tries)[number], 0.3, 2, (d, retry) => heard.push(retry, d.okPerSec));
    expect(x.okPerSec).toBe(564);
    expect(i).toBe(3);
    expect(heard).toEqual([1, 303, 2, 320]);
  });

  it('gives up after the retries, keeping the last try, and does not retry a quiet lane', () => {
    let n = 0;
    const x = untilQuiet(() => ({ othersCores: 1, try: ++n }), 0.3, 2);
    expect(x.try).toBe(3);
    let m = 0;
    expect(untilQuiet(() => ({ othersCores: 0.3, try: ++m }), 0.3, 2).try).toBe(1);
  });
});
