/**
 * `npm run bench`'s HTTP lanes each draw their own random pages (bench/lane-seed.mjs): a lane
 * that asked the pages an earlier lane of the round had asked found them in the service's
 * prepared-page cache (a page built twice is admitted), a cache hit the peer has no counterpart
 * of. Both servers of a step draw the same pages.
 */
import { describe, expect, it } from 'vitest';
import { laneSeed } from '../bench/lane-seed.mjs';
import { pageDraw, pagePath } from '../bench/page-draw.mjs';

/** The quick bench's typical workload: one session, pinned at its last seq. */
const PAGES = [{ id: 'pb-typical', params: { throughSeq: 208_349, beforeSeq: 58_556, maxMessages: 50 } }];
const DRAWN = 3000;

const lanePages = (seed: number): Set<string> => {
  const next = pageDraw(PAGES, { seed, random: true });
  return new Set(Array.from({ length: DRAWN }, () => pagePath(next())));
};

describe('bench lanes draw their own pages', () => {
  it('no two lanes of a two-round run (4 steps, warm-up and measured) share more than a few pages', () => {
    const lanes: { name: string; pages: Set<string> }[] = [];
    for (let round = 0; round < 2; round++)
      for (let step = 0; step < 4; step++)
        for (const warm of [false, true]) lanes.push({ name: `r${round} s${step}${warm ? ' warm' : ''}`, pages: lanePages(laneSeed({ round, step, warm })) });
    let worst = 0;
    for (let i = 0; i < lanes.length; i++)
      for (let j = i + 1; j < lanes.length; j++) {
        let shared = 0;
        for (const p of (lanes[i] as { pages: Set<string> }).pages) if ((lanes[j] as { pages: Set<string> }).pages.has(p)) shared++;
        worst = Math.max(worst, shared);
      }
    // Chance alone: 3,000 draws of ~208K pages each, ~43 in common expected between two lanes.
    expect(worst).toBeLessThan(DRAWN * 0.05);
  });

  it('both servers of a step are asked the same pages in the same order', () => {
    const seed = laneSeed({ round: 1, step: 2, warm: false });
    const a = pageDraw(PAGES, { seed, random: true });
    const b = pageDraw(PAGES, { seed: laneSeed({ round: 1, step: 2, warm: false }), random: true });
    for (let k = 0; k < 100; k++) expect(pagePath(b())).toBe(pagePath(a()));
  });
});
