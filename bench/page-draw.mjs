// The pages an HTTP lane asks, in order: the workload's fixed list cycled, or
// (random) a random session of the list and a random beforeSeq per request,
// pinned at the session's last seq, as `session-pager loadtest --scenario
// random` asks. One draw for every generator (http-load.mjs, lean-load.mjs),
// so their lanes ask the same pages in the same sequence for the same seed.
const dist = new URL('../dist/', import.meta.url);
const { mulberry32 } = await import(new URL('main/gen/prng.js', dist).href);

/** A function giving the next page `{ id, params }` each call. pages: [{ id, params }]. */
export function pageDraw(pages, { seed, random }) {
  const rand = mulberry32(Number(seed));
  // The sessions of the list and each one's last seq (pinned cut of the random pages).
  const lastSeq = new Map();
  for (const p of pages) lastSeq.set(p.id, Math.max(lastSeq.get(p.id) ?? -1, p.params.throughSeq ?? -1));
  const ids = [...lastSeq.keys()];
  let i = 0;
  return () => {
    if (!random) return pages[i++ % pages.length];
    const id = ids[Math.floor(rand() * ids.length)];
    const last = lastSeq.get(id);
    return { id, params: { throughSeq: last, beforeSeq: 1 + Math.floor(rand() * (last + 1)), maxMessages: 50 } };
  };
}

/** A page's request path. */
export const pagePath = ({ id, params }) => `/v1/sessions/${encodeURIComponent(id)}/page?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}`;
