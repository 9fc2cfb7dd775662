/**
 * An attach's time split by who adds it (the overload suite's `--phases`): the clients' own
 * times (overload-clients.mjs, `traceAttach`) matched by port with the server's
 * (attach-probe.mjs), all on the machine's monotonic clock.
 *
 *   connect  the client asked → its socket connected (the kernel's handshake, seen when the load
 *            generator's loop gets to it)
 *   accept   connected → the server's loop accepted it (the kernel's accept queue: the server's
 *            loop busy elsewhere)
 *   read     accepted → the request's head parsed
 *   handle   parsed → the server's first write (route, admission, the snapshot)
 *   deliver  the server's first write → the client's response callback (the load generator's
 *            loop and parser)
 *   body     the head → the whole snapshot at the client
 *
 * connect, deliver and body are the load generator's side (and the kernel's); accept, read and
 * handle the server's.
 */
export const PHASES = ['connect', 'accept', 'read', 'handle', 'deliver', 'body'];
const SERVER = new Set(['accept', 'read', 'handle']);

/** The nearest-rank percentile of an ascending array (null if empty); the overload suite's too. */
export function percentile(sorted, p) {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const r1 = (x) => (x === null ? null : Math.round(x * 10) / 10);

/** One row per attach that both sides saw: its total and its phases, ms. */
export function matchAttaches(clientTrace, serverRecords) {
  const byPort = new Map();
  for (const s of serverRecords) {
    if (!byPort.has(s.port)) byPort.set(s.port, []);
    byPort.get(s.port).push(s);
  }
  const rows = [];
  let unmatched = 0;
  for (const c of clientTrace) {
    if (c.snapshot === null || c.port === null || c.head === null) continue;
    // A port is reused over a run: the server's connection accepted between this attach's start and its head.
    const s = (byPort.get(c.port) ?? []).filter((x) => x.accept >= c.start - 1 && x.accept <= c.head && x.request !== null && x.write !== null);
    if (s.length !== 1) {
      unmatched++;
      continue;
    }
    const [x] = s;
    rows.push({ total: c.snapshot - c.start, connect: c.connect - c.start, accept: x.accept - c.connect, read: x.request - x.accept, handle: x.write - x.request, deliver: c.head - x.write, body: c.snapshot - c.head });
  }
  return { rows, unmatched };
}

/**
 * Per phase p50/p99/max; and the slowest 1% of attaches (those that set the p99) split: the mean
 * of each phase over them, and the share of their time on the server's side.
 */
export function summarizePhases({ rows, unmatched }) {
  const out = { matched: rows.length, unmatched, phases: {}, slowest: {} };
  for (const k of ['total', ...PHASES]) {
    const xs = rows.map((r) => r[k]).sort((a, b) => a - b);
    out.phases[k] = { p50: r1(percentile(xs, 50)), p99: r1(percentile(xs, 99)), max: r1(xs.at(-1) ?? null) };
  }
  const slow = [...rows].sort((a, b) => b.total - a.total).slice(0, Math.max(1, Math.ceil(rows.length / 100)));
  if (rows.length > 0) {
    for (const k of ['total', ...PHASES]) out.slowest[k] = r1(slow.reduce((a, r) => a + r[k], 0) / slow.length);
    const server = slow.reduce((a, r) => a + PHASES.filter((k) => SERVER.has(k)).reduce((b, k) => b + r[k], 0), 0);
    out.slowestServerShare = Math.round((server / slow.reduce((a, r) => a + r.total, 0)) * 100) / 100;
  }
  return out;
}
