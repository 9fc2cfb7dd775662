import { describe, expect, it } from 'vitest';
import { AdmittedTimes } from '../src/main/server/admitted-times.js';

describe('the admission times of requests in flight (admitted-times.ts)', () => {
  it('gives the oldest time in flight as a Map in admission order does, over any order of releases', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (const maxInFlight of [1, 2, 16, 3000]) {
      const times = new AdmittedTimes();
      const reference = new Map<number, number>();
      const keys: number[] = [];
      let t = 0;
      for (let step = 0; step < 20000; step++) {
        if (keys.length < maxInFlight && (keys.length === 0 || random() < 0.5)) {
          t += random();
          const key = times.add(t);
          expect(reference.has(key)).toBe(false);
          reference.set(key, t);
          keys.push(key);
        } else {
          const [key] = keys.splice(Math.floor(random() * keys.length), 1) as [number];
          times.release(key);
          reference.delete(key);
        }
        expect(times.oldest()).toBe(reference.values().next().value);
      }
    }
  });

  it('is empty when every admission is released', () => {
    const times = new AdmittedTimes();
    expect(times.oldest()).toBeUndefined();
    const a = times.add(1);
    const b = times.add(2);
    times.release(a);
    expect(times.oldest()).toBe(2);
    times.release(b);
    expect(times.oldest()).toBeUndefined();
    const c = times.add(3);
    expect(times.oldest()).toBe(3);
    times.release(c);
    expect(times.oldest()).toBeUndefined();
  });
});
