/**
 * A histogram series bound once (src/main/server/prom-series.ts) says in the
 * registry's text exactly what prom-client's own observe says for the same
 * values: buckets (a value on a bound, past the last bound, 0), sum and
 * count, beside series observed the public way, after a reset, and for a
 * series that existed before it was bound. The same for a counter series
 * (counterSeries).
 */
import { describe, expect, it } from 'vitest';
import { prom } from '../src/main/server/prom.js';
import { counterSeries, histogramSeries } from '../src/main/server/prom-series.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const VALUES = [0, 0.0005, 0.0004999, 0.0007, 0.001, 0.02, 0.25, 0.9999, 1, 1.5, 30, 0.003, 0.003];

function pair() {
  const make = () => {
    const registry = new prom.Registry();
    const h = new prom.Histogram({ name: 'x_seconds', help: 'x', labelNames: ['phase', 'kind'], buckets: BUCKETS, registers: [registry] });
    return { registry, h };
  };
  return { bound: make(), plain: make() };
}

describe('histogramSeries', () => {
  it('gives the text of the same values observed the public way, beside other series, across a reset', async () => {
    const { bound, plain } = pair();
    const a = histogramSeries(bound.h, { phase: 'a', kind: 'k' });
    const b = histogramSeries(bound.h, { phase: 'b', kind: 'k' });
    // Bound but not observed: no series yet (as before binding).
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    for (const [i, v] of VALUES.entries()) {
      a.observe(v);
      plain.h.observe({ phase: 'a', kind: 'k' }, v);
      if (i % 3 === 0) {
        b.observe(v * 2);
        plain.h.observe({ phase: 'b', kind: 'k' }, v * 2);
        bound.h.observe({ phase: 'c', kind: 'k' }, v);
        plain.h.observe({ phase: 'c', kind: 'k' }, v);
      }
    }
    const text = await bound.registry.metrics();
    expect(text).toBe(await plain.registry.metrics());
    expect(text).toMatch(/^x_seconds_count\{phase="a",kind="k"\} 13$/m);
    expect(text).toMatch(/^x_seconds_bucket\{le="0\.0005",phase="a",kind="k"\} 3$/m);
    bound.h.reset();
    plain.h.reset();
    a.observe(0.004);
    plain.h.observe({ phase: 'a', kind: 'k' }, 0.004);
    a.observe(0.2);
    plain.h.observe({ phase: 'a', kind: 'k' }, 0.2);
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    expect(await bound.registry.metrics()).not.toMatch(/phase="b"/);
  });

  it('binds the one series of a histogram without labels (shown at 0 before any value, as prom-client shows it)', async () => {
    const make = () => {
      const registry = new prom.Registry();
      const h = new prom.Histogram({ name: 'y_bytes', help: 'y', buckets: [1_024, 16_384, 131_072], registers: [registry] });
      return { registry, h };
    };
    const [bound, plain] = [make(), make()];
    const y = histogramSeries(bound.h, {});
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    for (const v of [0, 1_024, 1_025, 200_000, 5, 16_384]) {
      y.observe(v);
      plain.h.observe(v);
    }
    const text = await bound.registry.metrics();
    expect(text).toBe(await plain.registry.metrics());
    expect(text).toMatch(/^y_bytes_bucket\{le="1024"\} 3$/m);
    expect(text).toMatch(/^y_bytes_count 6$/m);
  });

  it('adds to a series observed the public way before it was bound, and refuses what prom-client refuses', async () => {
    const { bound, plain } = pair();
    bound.h.observe({ phase: 'a', kind: 'k' }, 0.3);
    plain.h.observe({ phase: 'a', kind: 'k' }, 0.3);
    const a = histogramSeries(bound.h, { kind: 'k', phase: 'a' });
    for (const v of VALUES) {
      a.observe(v);
      plain.h.observe({ phase: 'a', kind: 'k' }, v);
    }
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    expect(() => a.observe(Number.NaN)).toThrow(TypeError);
    expect(() => a.observe(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
  });
});

describe('counterSeries', () => {
  const make = () => {
    const registry = new prom.Registry();
    const c = new prom.Counter({ name: 'z_total', help: 'z', labelNames: ['route'], registers: [registry] });
    return { registry, c };
  };

  it('gives the text of the same increments made the public way, beside other series, across a reset', async () => {
    const [bound, plain] = [make(), make()];
    const a = counterSeries(bound.c, { route: '/a' });
    // Bound but not incremented: no series yet.
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    for (const [i, v] of [1, 0, 2.5, 100_000, 7].entries()) {
      a.inc(v);
      plain.c.inc({ route: '/a' }, v);
      a.inc();
      plain.c.inc({ route: '/a' });
      if (i % 2 === 0) {
        bound.c.inc({ route: '/b' }, v);
        plain.c.inc({ route: '/b' }, v);
      }
    }
    const text = await bound.registry.metrics();
    expect(text).toBe(await plain.registry.metrics());
    expect(text).toMatch(/^z_total\{route="\/a"\} 100015\.5$/m);
    bound.c.reset();
    plain.c.reset();
    a.inc(3);
    plain.c.inc({ route: '/a' }, 3);
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    expect(await bound.registry.metrics()).not.toMatch(/route="\/b"/);
  });

  it('adds to a series made before it was bound, and refuses what prom-client refuses', async () => {
    const [bound, plain] = [make(), make()];
    bound.c.inc({ route: '/a' }, 5);
    plain.c.inc({ route: '/a' }, 5);
    const a = counterSeries(bound.c, { route: '/a' });
    a.inc(2);
    a.inc(2);
    plain.c.inc({ route: '/a' }, 4);
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
    expect(() => a.inc(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => a.inc(-1)).toThrow();
    expect(await bound.registry.metrics()).toBe(await plain.registry.metrics());
  });
});
