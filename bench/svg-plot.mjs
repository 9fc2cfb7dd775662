// Minimal SVG charts written by hand (no browser, no Python): line charts
// with optional log axes, and grouped bar charts. Used by the benches.
// `note`: a line under the title saying which run made the chart (mode, time,
// machine): the quick and the full bench write the same files, and a plot in
// docs/ must say which run it shows.
import { cpus } from 'node:os';

const W = 720;
const H = 420;
const M = { l: 70, r: 170, t: 40, b: 55 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf'];
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmtTick = (v) => (v >= 1e6 ? `${+(v / 1e6).toPrecision(3)}M` : v >= 1e3 ? `${+(v / 1e3).toPrecision(3)}k` : `${+v.toPrecision(3)}`);

function ticks(lo, hi, log) {
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
    return out;
  }
  const step = 10 ** Math.floor(Math.log10((hi - lo) / 5 || 1));
  const s = [1, 2, 5, 10].map((k) => k * step).find((k) => (hi - lo) / k <= 6) ?? step * 10;
  const out = [];
  for (let v = Math.ceil(lo / s) * s; v <= hi + 1e-9; v += s) out.push(v);
  return out;
}

function frame(title, xLabel, yLabel, note) {
  const lines = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${M.l}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text x="${M.l + (W - M.l - M.r) / 2}" y="${H - 12}" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text transform="translate(16 ${M.t + (H - M.t - M.b) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
  ];
  if (note !== undefined) lines.push(`<text x="${M.l}" y="35" font-size="10" fill="#555">${esc(note)}</text>`);
  return lines;
}

/** series: [{ name, points: [[x, y], ...], dashed? }]; note: which run (optional) */
export function lineChart({ title, note = /** @type {string | undefined} */ (undefined), xLabel, yLabel, logX = false, logY = false, series }) {
  const pts = series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!logX || x > 0) && (!logY || y > 0));
  let [x0, x1] = [Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...pts.map((p) => p[1])), Math.max(...pts.map((p) => p[1]))];
  if (logX) [x0, x1] = [10 ** Math.floor(Math.log10(x0)), 10 ** Math.ceil(Math.log10(x1))];
  else if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  if (logY) [y0, y1] = [10 ** Math.floor(Math.log10(y0)), 10 ** Math.ceil(Math.log10(y1))];
  else [y0, y1] = [0, y1 * 1.1 || 1];
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const sx = (x) => M.l + (logX ? (Math.log10(x) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0)) : (x - x0) / (x1 - x0)) * pw;
  const sy = (y) => M.t + ph - (logY ? (Math.log10(y) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0)) : (y - y0) / (y1 - y0)) * ph;
  const out = frame(title, xLabel, yLabel, note);
  out.push(`<rect x="${M.l}" y="${M.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (const t of ticks(x0, x1, logX)) out.push(`<line x1="${sx(t)}" y1="${M.t}" x2="${sx(t)}" y2="${M.t + ph}" stroke="#eee"/><text x="${sx(t)}" y="${M.t + ph + 16}" text-anchor="middle">${fmtTick(t)}</text>`);
  for (const t of ticks(y0, y1, logY)) out.push(`<line x1="${M.l}" y1="${sy(t)}" x2="${M.l + pw}" y2="${sy(t)}" stroke="#eee"/><text x="${M.l - 6}" y="${sy(t) + 4}" text-anchor="end">${fmtTick(t)}</text>`);
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const ps = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!logX || x > 0) && (!logY || y > 0)).sort((a, b) => a[0] - b[0]);
    if (ps.length > 1) out.push(`<polyline fill="none" stroke="${c}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="6 4"' : ''} points="${ps.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`);
    for (const [x, y] of ps) out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3.5" fill="${c}"/>`);
    out.push(`<rect x="${W - M.r + 12}" y="${M.t + i * 20}" width="12" height="12" fill="${c}"/><text x="${W - M.r + 30}" y="${M.t + i * 20 + 10}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** categories: names along x; series: [{ name, values: [per category] }]; note: which run (optional) */
export function barChart({ title, note = /** @type {string | undefined} */ (undefined), xLabel, yLabel, categories, series, logY = false }) {
  const vals = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v) && v > 0);
  const y1 = logY ? 10 ** Math.ceil(Math.log10(Math.max(...vals))) : Math.max(...vals) * 1.15;
  const y0 = logY ? 10 ** Math.floor(Math.log10(Math.min(...vals))) : 0;
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const sy = (y) => M.t + ph - (logY ? (Math.log10(y) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0)) : (y - y0) / (y1 - y0)) * ph;
  const out = frame(title, xLabel, yLabel, note);
  out.push(`<rect x="${M.l}" y="${M.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (const t of ticks(y0 || 1, y1, logY)) if (t >= y0) out.push(`<line x1="${M.l}" y1="${sy(t)}" x2="${M.l + pw}" y2="${sy(t)}" stroke="#eee"/><text x="${M.l - 6}" y="${sy(t) + 4}" text-anchor="end">${fmtTick(t)}</text>`);
  const gw = pw / categories.length;
  const bw = (gw * 0.8) / series.length;
  categories.forEach((cat, ci) => {
    out.push(`<text x="${M.l + gw * ci + gw / 2}" y="${M.t + ph + 16}" text-anchor="middle">${esc(cat)}</text>`);
    series.forEach((s, si) => {
      const v = s.values[ci];
      if (!Number.isFinite(v) || v <= 0) return;
      const x = M.l + gw * ci + gw * 0.1 + bw * si;
      out.push(`<rect x="${x.toFixed(1)}" y="${sy(v).toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${(M.t + ph - sy(v)).toFixed(1)}" fill="${COLORS[si % COLORS.length]}"><title>${esc(`${s.name} ${cat}: ${v}`)}</title></rect>`);
    });
  });
  series.forEach((s, i) => out.push(`<rect x="${W - M.r + 12}" y="${M.t + i * 20}" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/><text x="${W - M.r + 30}" y="${M.t + i * 20 + 10}">${esc(s.name)}</text>`));
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** A plot's note: `what` (mode, rounds), when (UTC, to the minute) and on what machine. */
export function runNote(...what) {
  const cpu = cpus();
  return [...what, `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`, `${cpu.length} x ${cpu[0]?.model ?? '?'}`, `Node ${process.version}`].join(', ');
}
