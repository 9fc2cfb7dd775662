/**
 * A safe integer's decimal digits written straight into a byte buffer, pure:
 * the same bytes as `String(v)` (so `-0` is `0`), with no string made. The
 * page path writes a number per gap, per record head and per short-run event
 * (a run's seqs and times, its turn, step and index): through a string, each
 * was a NumberToString, a string concatenation and a UTF-8 encode.
 */

/** The two ASCII digits of 0..99: tens at 2k, units at 2k + 1. */
const DIGIT_PAIRS = new Uint8Array(200);
for (let k = 0; k < 100; k++) {
  DIGIT_PAIRS[2 * k] = 0x30 + ((k / 10) | 0);
  DIGIT_PAIRS[2 * k + 1] = 0x30 + (k % 10);
}

/** How many decimal digits a non-negative int32 has. */
function digitCount(u: number): number {
  if (u < 100000) return u < 100 ? (u < 10 ? 1 : 2) : u < 1000 ? 3 : u < 10000 ? 4 : 5;
  return u < 10000000 ? (u < 1000000 ? 6 : 7) : u < 100000000 ? 8 : u < 1000000000 ? 9 : 10;
}

/** A safe integer's decimal digits at out[o]; the index after them. */
export function writeInt(v: number, out: Uint8Array, o: number): number {
  if (v >= 0 && v < 10) {
    out[o] = 0x30 + v;
    return o + 1;
  }
  // Digits without a string, two per division (a row's gaps and a message's source seqs are
  // most of a binary page's numbers): the count by comparisons, not by dividing.
  if (v > -2147483648 && v < 2147483648) {
    let u = v | 0;
    if (u < 0) {
      out[o++] = 0x2d;
      u = -u;
    }
    const stop = o + digitCount(u);
    let at = stop;
    while (u >= 100) {
      const q = (u / 100) | 0;
      const r = (u - q * 100) << 1;
      out[--at] = DIGIT_PAIRS[r + 1] as number;
      out[--at] = DIGIT_PAIRS[r] as number;
      u = q;
    }
    if (u >= 10) {
      out[--at] = DIGIT_PAIRS[(u << 1) + 1] as number;
      out[--at] = DIGIT_PAIRS[u << 1] as number;
    } else out[--at] = 0x30 + u;
    return stop;
  }
  // Past 31 bits (an event's time in ms, a large seq): nine digits at a time, still without a
  // string (String(v) for each event's time cost a binary page's events more than their strings).
  let u = v;
  if (u < 0) {
    out[o++] = 0x2d;
    u = -u;
  }
  const hi = Math.floor(u / 1e9);
  o = writeInt(hi, out, o);
  let lo = (u - hi * 1e9) | 0;
  for (let at = o + 8; at >= o; at--) {
    const q = (lo / 10) | 0;
    out[at] = 0x30 + (lo - q * 10);
    lo = q;
  }
  return o + 9;
}
