// The seed of one HTTP lane of `npm run bench` (bench/peer-bench.mjs): the
// same for both servers in a step (they are asked the same pages in the same
// order), its own for every step, round and warm-up. A lane that drew the
// pages of an earlier lane on the same server found them in the service's
// prepared-page cache (a page built twice is admitted), which the peer has
// no counterpart of: random-page steps after a round's first were partly
// cache hits, and the server's RSS carried a full page cache.

/** step: the step's index in the round; warm: the warm-up before the measured lane. */
export function laneSeed({ round, step, warm }) {
  return (warm ? 500_001 : 1) + round * 1000 + step;
}
