/**
 * The benches' SVG charts (bench/svg-plot.mjs, issue 15: plots made with no browser or Python):
 * each a well-formed SVG document, log axes ticked by decade, text escaped, and the run that made
 * it named under the title (the quick and the full bench write the same files into docs/, so a
 * plot has to say which run it shows).
 */
import { describe, expect, it } from 'vitest';
import { barChart, lineChart, runNote } from '../bench/svg-plot.mjs';

/** Every tag closed in order (what an SVG viewer needs of it). */
function balanced(svg: string): boolean {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-z]+)[^>]*?(\/?)>/g)) {
    const [, close, name, self] = m as unknown as [string, string, string, string];
    if (self === '/') continue;
    if (close === '') stack.push(name);
    else if (stack.pop() !== name) return false;
  }
  return stack.length === 0;
}

describe('bench/svg-plot.mjs', () => {
  const series = [
    { name: 'session-pager', points: [[10_000, 1.2], [1_000_000, 20]] },
    { name: 'peer <sqlite> & co', dashed: true, points: [[10_000, 3], [1_000_000, 400], [5_000_000, NaN]] },
  ];

  it('draws a line chart with log axes by decade, escaped names, and the run under the title', () => {
    const note = runNote('quick mode', '2 rounds of 4 s');
    expect(note).toMatch(/^quick mode, 2 rounds of 4 s, \d{4}-\d\d-\d\d \d\d:\d\d UTC, \d+ x .+, Node v\d+/);
    const svg = lineChart({ title: 'Cold page latency', note, xLabel: 'events (log)', yLabel: 'ms (log)', logX: true, logY: true, series }) as string;
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(balanced(svg)).toBe(true);
    expect(svg).toContain(`>${note.replace(/&/g, '&amp;')}</text>`);
    for (const t of ['10k', '100k', '1M', '1', '10', '100', '1k']) expect(svg).toContain(`>${t}</text>`);
    expect(svg).toContain('peer &lt;sqlite&gt; &amp; co');
    expect(svg.match(/<polyline /g)).toHaveLength(2);
    expect(svg.match(/<circle /g)).toHaveLength(4); // the NaN point is left out
    expect(svg).toContain('stroke-dasharray');
  });

  it('draws a bar chart with the note too, and no note line when none is given', () => {
    const svg = barChart({ title: 'Wire bytes', note: 'full mode', xLabel: 'workload', yLabel: 'bytes (log)', logY: true, categories: ['tail', 'many'], series: [{ name: 'identity', values: [4_000_000, 80_000] }, { name: 'zstd', values: [300_000, 9_000] }] }) as string;
    expect(balanced(svg)).toBe(true);
    expect(svg).toContain('>full mode</text>');
    expect(svg.match(/<\/rect>/g)).toHaveLength(4); // one bar (with its <title>) per value
    const bare = lineChart({ title: 'T', xLabel: 'x', yLabel: 'y', series }) as string;
    expect(bare).not.toContain('font-size="10"');
  });
});
