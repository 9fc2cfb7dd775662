/**
 * The overload suite's side-by-side measure (overload.mjs --interleave): capacity (the low level,
 * e.g. 16 connections) and overload (the high level, e.g. 256) measured in short windows that
 * alternate, low / high ignoring / low / high honouring / low ..., and the goodput ratio taken per
 * pair of neighbouring windows (a high window against the low window just before it, and against
 * the one just after it), reported as the median and the worst pair.
 *
 * Why: measured minutes apart, as the rounds of the other modes do, capacity and overload see
 * different machines (on the shared 2-core machine the CPU a pinned server gets, and how fast its
 * core runs, moved 20% between runs at load 14-21: 12-03, benchmarks.md "rel, second round"); a
 * second apart, the machine is nearly the same, and what differs is the level.
 */
import { percentile } from './attach-phases.mjs';

/** The schedule: `pairs` times, for each mode, a low window then a high one; a low window closes it. */
export function interleaveSchedule({ low, high, modes, pairs, seconds, settle, quiet = 0, lead = 0 }) {
  // `lead` windows first (low, high, ... of the first kind), run and not counted (marked `lead`):
  // after the warm-up the server still got faster over its first windows (a run's first pair of
  // 12-03 served ~25% fewer pages per CPU-second than the windows after it).
  const out = Array.from({ length: lead }, (_, k) => ({ conns: k % 2 === 0 ? low : high, mode: modes[0], seconds, settle, quiet, lead: true }));
  for (let p = 0; p < pairs; p++) {
    for (const mode of p % 2 === 0 ? modes : [...modes].reverse()) {
      out.push({ conns: low, mode, seconds, settle, quiet });
      out.push({ conns: high, mode, seconds, settle, quiet });
    }
  }
  out.push({ conns: low, mode: modes[0], seconds, settle, quiet });
  return out;
}

const median = (xs) => {
  const v = xs.filter((x) => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  return v.length === 0 ? null : v.length % 2 === 1 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const r2 = (x) => (x === null || !Number.isFinite(x) ? null : Math.round(x * 100) / 100);
const r3 = (x) => (x === null || !Number.isFinite(x) ? null : Math.round(x * 1000) / 1000);

/**
 * Per mode: every (high, neighbouring low) pair's goodput ratio and, where the windows carry the
 * server's CPU-seconds, its 2xx-per-CPU-second ratio; the median and worst of each; the same with
 * each high window against the mean of both its neighbours (a linear drift cancels); the admitted
 * p99 of the high windows pooled against the low windows' pooled (the unloaded p99), and per
 * window against its neighbours'. `windows`: [{ conns, mode, measuredSeconds, ok, lat, cpuSeconds? }].
 */
export function interleavedPairs(all, { low, high, modes }) {
  // Lead windows are not measured: not a window, nor anyone's neighbour.
  const windows = all.filter((w) => w.lead !== true);
  const goodput = (w) => w.ok / w.measuredSeconds;
  const perCpu = (w) => (w.cpuSeconds > 0 ? w.ok / w.cpuSeconds : null);
  const p99 = (w) => (w.lat.length === 0 ? null : percentile([...w.lat].sort((a, b) => a - b), 99));
  const lowLat = windows.filter((w) => w.conns === low).flatMap((w) => w.lat).sort((a, b) => a - b);
  const unloadedP99 = lowLat.length === 0 ? null : percentile(lowLat, 99);
  const out = { unloadedP99: r2(unloadedP99) };
  for (const mode of modes) {
    const ratios = [];
    const cpuRatios = [];
    const both = [];
    const bothCpu = [];
    const p99Ratios = [];
    const highLat = [];
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i];
      if (w.conns !== high || w.mode !== mode) continue;
      highLat.push(...w.lat);
      const ns = [windows[i - 1], windows[i + 1]].filter((n) => n !== undefined && n.conns === low);
      for (const n of ns) {
        ratios.push(goodput(w) / goodput(n));
        const [a, b] = [perCpu(w), perCpu(n)];
        if (a !== null && b !== null) cpuRatios.push(a / b);
        const [pa, pb] = [p99(w), p99(n)];
        if (pa !== null && pb !== null) p99Ratios.push(pa / pb);
      }
      if (ns.length === 2) {
        both.push(goodput(w) / ((goodput(ns[0]) + goodput(ns[1])) / 2));
        const c = ns.map(perCpu);
        if (perCpu(w) !== null && c.every((x) => x !== null)) bothCpu.push(perCpu(w) / ((c[0] + c[1]) / 2));
      }
    }
    highLat.sort((a, b) => a - b);
    const highP99 = highLat.length === 0 ? null : percentile(highLat, 99);
    const hs = windows.filter((w) => w.conns === high && w.mode === mode);
    out[mode] = {
      windows: hs.length,
      pairs: ratios.length,
      goodput: { median: r3(median(ratios)), worst: r3(ratios.length ? Math.min(...ratios) : null), best: r3(ratios.length ? Math.max(...ratios) : null), under90: ratios.filter((x) => x < 0.9).length },
      againstBothNeighbours: { median: r3(median(both)), worst: r3(both.length ? Math.min(...both) : null), under90: both.filter((x) => x < 0.9).length },
      perCpuSecond: { median: r3(median(cpuRatios)), worst: r3(cpuRatios.length ? Math.min(...cpuRatios) : null), bothNeighboursMedian: r3(median(bothCpu)), bothNeighboursWorst: r3(bothCpu.length ? Math.min(...bothCpu) : null) },
      p99: { pooled: r2(highP99), unloaded: r2(unloadedP99), ratio: r2(highP99 !== null && unloadedP99 ? highP99 / unloadedP99 : null), perPairMedian: r2(median(p99Ratios)), perPairWorst: r2(p99Ratios.length ? Math.max(...p99Ratios) : null) },
      highGoodput: r2(median(hs.map(goodput))),
      shedPerSecond: r2(median(hs.map((w) => w.shed / w.measuredSeconds))),
    };
  }
  const lows = windows.filter((w) => w.conns === low);
  out.lowGoodput = r2(median(lows.map(goodput)));
  // The noise floor: each low window against the low windows next to it in the schedule (one high
  // window between), both ways. Nothing differs between them but the moment: a high/low pair's
  // worst below this one's is the level's, not the machine's.
  const control = [];
  for (let k = 0; k + 1 < lows.length; k++) {
    const [a, b] = [goodput(lows[k]), goodput(lows[k + 1])];
    control.push(a / b, b / a);
  }
  out.lowControl = { pairs: control.length, median: r3(median(control)), worst: r3(control.length ? Math.min(...control) : null), under90: control.filter((x) => x < 0.9).length };
  out.lowShed = lows.reduce((a, w) => a + w.shed, 0);
  return out;
}

/**
 * A capacity sweep (overload.mjs --interleave with three or more levels): `cycles` times, for each
 * mode, one window at every level, up the levels and then down them on the next cycle (so a drift
 * of the machine meets every level alike), after `lead` uncounted windows.
 */
export function sweepSchedule({ levels, modes, cycles, seconds, settle, quiet = 0, lead = 0 }) {
  const out = Array.from({ length: lead }, (_, k) => ({ conns: levels[k % levels.length], mode: modes[0], seconds, settle, quiet, lead: true }));
  for (let c = 0; c < cycles; c++) {
    for (const mode of c % 2 === 0 ? modes : [...modes].reverse()) {
      for (const conns of c % 2 === 0 ? levels : [...levels].reverse()) out.push({ conns, mode, seconds, settle, quiet });
    }
  }
  return out;
}

/**
 * The sweep's figures per mode and level: the median window's goodput, its share of the best
 * level's, the admitted p99 pooled over the level's windows. Capacity (the knee) is the lowest
 * level whose goodput reaches `kneeShare` of the best level's: past it more connections add no
 * goodput. Each level's p99 is given against the knee's (issue 15's "p99 at capacity") and against
 * the lowest level's (the unloaded p99), both, so neither stands in for the other.
 */
export function sweepLevels(all, { levels, modes, kneeShare = 0.9 }) {
  const windows = all.filter((w) => w.lead !== true);
  const goodput = (w) => w.ok / w.measuredSeconds;
  const out = {};
  for (const mode of modes) {
    const rows = levels.map((conns) => {
      const ws = windows.filter((w) => w.conns === conns && w.mode === mode);
      const lat = ws.flatMap((w) => w.lat).sort((a, b) => a - b);
      const seconds = ws.reduce((a, w) => a + w.measuredSeconds, 0);
      return {
        conns,
        windows: ws.length,
        goodput: r2(median(ws.map(goodput))),
        shedPerSecond: r2(seconds > 0 ? ws.reduce((a, w) => a + w.shed, 0) / seconds : null),
        p99: r2(lat.length === 0 ? null : percentile(lat, 99)),
        p50: r2(lat.length === 0 ? null : percentile(lat, 50)),
        admitted: lat.length,
        other: ws.reduce((a, w) => a + (w.other ?? 0), 0),
        errors: ws.reduce((a, w) => a + (w.errors ?? 0), 0),
        errorCodes: ws.reduce((a, w) => {
          for (const [c, n] of Object.entries(w.errorCodes ?? {})) a[c] = (a[c] ?? 0) + n;
          return a;
        }, {}),
      };
    });
    const best = Math.max(...rows.map((r) => r.goodput ?? 0));
    const knee = rows.find((r) => r.goodput !== null && r.goodput >= kneeShare * best) ?? null;
    const lowest = rows[0];
    for (const r of rows) {
      r.shareOfBest = r3(best > 0 && r.goodput !== null ? r.goodput / best : null);
      r.p99OverKnee = r2(knee?.p99 && r.p99 !== null ? r.p99 / knee.p99 : null);
      r.p99OverLowest = r2(lowest.p99 && r.p99 !== null ? r.p99 / lowest.p99 : null);
    }
    out[mode] = { knee: knee?.conns ?? null, kneeP99: knee?.p99 ?? null, bestGoodput: r2(best), rows };
  }
  return out;
}
