/**
 * One series of a prom-client histogram (one set of label values), bound once
 * for the page path's observations. prom-client's `observe(labels, v)` and
 * even a `labels(...)` child check the label names, build the series' hash
 * string and look it up, and key the bucket by the bound's number (a number
 * turned into a property name) at every observation: a page made 8 of them
 * (7 phases and its latency), 1-2% of the main thread at 16 connections
 * (docs/benchmarks.md, "proof, second round (thirteenth session)"). Bound
 * here, an observation adds to the series' own record: its sum, its count and
 * its bucket, keyed by the bound's name made once.
 *
 * The record is prom-client's own (its `hashMap` entry: `sum`, `count`,
 * `bucketValues` by upper bound), so the registry's text is the same whichever
 * way a value came in. prom-client is pinned (package.json); the record is
 * taken only after one observation through prom-client's public `labels()`
 * child made or found it, and only if it has that shape; a histogram whose
 * map was replaced since (`reset()`) is looked up again the same way, and one
 * whose internals differ is observed through the public child every time
 * (test/prom-series.test.ts compares the text with a histogram observed the
 * public way).
 */
import type { Counter, Histogram } from 'prom-client';

/** prom-client's per-series record (lib/histogram.js createBaseValues). */
interface SeriesRecord {
  labels: Record<string, unknown>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/** The histogram's fields read here (lib/histogram.js). */
interface HistogramInternals {
  hashMap?: Record<string, SeriesRecord>;
  upperBounds?: readonly number[];
}

export interface SeriesObserver {
  observe(value: number): void;
}

/** `h`'s series of `labels` (every label name of `h` given a value). */
export function histogramSeries<T extends string>(h: Histogram<T>, labels: Record<T, string>): SeriesObserver {
  const inner = h as unknown as HistogramInternals;
  const child = h.labels(labels);
  const bounds = Array.isArray(inner.upperBounds) ? [...inner.upperBounds] : null;
  const keys = bounds === null ? null : bounds.map(String);
  const names = Object.keys(labels) as T[];
  let map: Record<string, SeriesRecord> | undefined;
  let record: SeriesRecord | undefined;
  let publicOnly = keys === null;
  /** The series' record in the histogram's current map, if it has prom-client's shape. */
  const find = (): SeriesRecord | undefined => {
    const now = inner.hashMap;
    if (keys === null || now === null || typeof now !== 'object') return undefined;
    for (const r of Object.values(now)) {
      if (r === null || typeof r !== 'object' || r.labels === null || typeof r.labels !== 'object') return undefined;
      if (names.some((n) => r.labels[n] !== labels[n]) || Object.keys(r.labels).length !== names.length) continue;
      if (typeof r.sum !== 'number' || typeof r.count !== 'number' || r.bucketValues === null || typeof r.bucketValues !== 'object') return undefined;
      if (keys.some((k) => typeof r.bucketValues[k] !== 'number')) return undefined;
      map = now;
      return r;
    }
    return undefined;
  };
  return {
    observe(value: number): void {
      if (record !== undefined && inner.hashMap === map && Number.isFinite(value)) {
        record.sum += value;
        record.count += 1;
        const b = bounds as number[];
        for (let i = 0; i < b.length; i++) {
          if (value <= (b[i] as number)) {
            const k = (keys as string[])[i] as string;
            record.bucketValues[k] = (record.bucketValues[k] as number) + 1;
            break;
          }
        }
        return;
      }
      // The public way (it also makes the series, and refuses a value that is not a finite number).
      child.observe(value);
      if (!publicOnly) {
        record = find();
        // Not prom-client's shape: the public way from now on.
        if (record === undefined) publicOnly = true;
      }
    },
  };
}

/** prom-client's per-series record of a counter (lib/counter.js setValue). */
interface CounterRecord {
  labels: Record<string, unknown>;
  value: number;
}

export interface CounterSeries {
  /** Adds `value` (1 when omitted; a finite number >= 0, as prom-client's `inc` takes). */
  inc(value?: number): void;
}

/**
 * `c`'s series of `labels`, bound as histogramSeries binds a histogram's: prom-client's `inc(labels,
 * v)` hashes the labels and checks their names at every call (two a page on the direct page path:
 * pages served and bytes out). Bound, an increment adds to the series' own record (`value`), found
 * after one public increment made it, and only while it has prom-client's shape and the counter's
 * map is the one it was found in; anything else goes the public way.
 */
export function counterSeries<T extends string>(c: Counter<T>, labels: Record<T, string>): CounterSeries {
  const inner = c as unknown as { hashMap?: Record<string, CounterRecord> };
  const names = Object.keys(labels) as T[];
  let map: Record<string, CounterRecord> | undefined;
  let record: CounterRecord | undefined;
  let publicOnly = false;
  const find = (): CounterRecord | undefined => {
    const now = inner.hashMap;
    if (now === null || typeof now !== 'object') return undefined;
    for (const r of Object.values(now)) {
      if (r === null || typeof r !== 'object' || r.labels === null || typeof r.labels !== 'object') return undefined;
      if (names.some((n) => r.labels[n] !== labels[n]) || Object.keys(r.labels).length !== names.length) continue;
      if (typeof r.value !== 'number') return undefined;
      map = now;
      return r;
    }
    return undefined;
  };
  return {
    inc(value = 1): void {
      if (record !== undefined && inner.hashMap === map && Number.isFinite(value) && value >= 0) {
        record.value += value;
        return;
      }
      // The public way (it makes the series, and refuses what a counter cannot add).
      c.inc(labels, value);
      if (!publicOnly) {
        record = find();
        if (record === undefined) publicOnly = true;
      }
    },
  };
}
