import { describe, expect, it } from 'vitest';
import { claimWords, frameClaim, wordsClaim } from '../src/core/frame-claim.js';

// The planner hashes each line's claim from the words of the Float64Array its fields were read
// into (core/page-planner.ts); the workers hash the frames' values with frameClaim. A page is
// served only when both agree, so the two must be the same function of the same float64 bits.
describe('wordsClaim', () => {
  it('is frameClaim of the three float64s whose words it reads', () => {
    expect(claimWords).toBe(true); // every platform these tests run on is little endian
    const line = new Float64Array(3);
    const words = new Int32Array(line.buffer);
    const values = [0, -0, 1, -1, 7, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, 148216557, 4999999, 2 ** 53 - 1, 100.0000001, 0.5, -(2 ** 40)];
    let checked = 0;
    for (const seq of values) {
      for (const offset of values) {
        for (const group of [-1, 0, seq, 2 ** 31 + 3, 100.0000001]) {
          line[0] = seq;
          line[1] = offset;
          line[2] = group;
          expect(wordsClaim(words), `${seq} ${offset} ${group}`).toBe(frameClaim(seq, offset, group));
          checked++;
        }
      }
    }
    expect(checked).toBe(values.length * values.length * 5);
  });

  it('tells -0 from 0 and a fraction from its integer, as frameClaim does', () => {
    const line = new Float64Array([5, 0, -1]);
    const words = new Int32Array(line.buffer);
    const zero = wordsClaim(words);
    line[1] = -0;
    expect(wordsClaim(words)).not.toBe(zero);
    line[1] = 0;
    line[0] = 5.0000001;
    expect(wordsClaim(words)).not.toBe(zero);
  });
});
