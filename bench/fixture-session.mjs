// A session of fixture-shaped conversations for the benches: the dsh
// fixtures' conversations (test/fixtures/dsh, ~28 events and ~2.6 KB per
// message, as real logs have) repeated with shifted seqs and times until
// the session holds at least `events` events, appended 7 events at a time
// (runs split across append batches, as a live host writes them).
// Generated sessions stream ~900 deltas per message, so their 50-message
// pages are far from a typical page; these are typical.
// Used by bench/page-bench.mjs ("typical") and bench/peer-bench.mjs.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = (p) => new URL(`../dist/${p}`, import.meta.url).href;

/** The fixtures' conversations, each as its list of logical events (rows expanded). */
async function fixtureConversations() {
  const { expandRow } = await import(dist('core/chunk-codec.js'));
  const fixtures = join(root, 'test/fixtures/dsh');
  return readdirSync(fixtures)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => {
      const out = [];
      for (const line of readFileSync(join(fixtures, f), 'utf8').split('\n').slice(1)) {
        if (!line) continue;
        const r = JSON.parse(line);
        if ('seq0' in r) out.push(...expandRow(r));
        else out.push(r);
      }
      return out;
    })
    .filter((c) => c.length > 0);
}

/** Write session `id` into `dataDir` (it must not exist yet); resolves to its event count. */
export async function buildFixtureSession(dataDir, id, events) {
  const { SessionWriter } = await import(dist('main/session-writer.js'));
  const convs = await fixtureConversations();
  const w = await SessionWriter.create(dataDir, id, { type: 'session', version: 0, createdAt: 1_780_000_000_000 }, { durable: false });
  let seq = 0;
  let time = 1_780_000_000_000;
  while (seq < events) {
    for (const conv of convs) {
      const base = seq;
      const t0 = conv[0]?.time ?? 0;
      const shifted = conv.map((e) => {
        const c = { ...e, seq: base + e.seq, time: time + (e.time - t0) };
        if (Array.isArray(e.sourceEventSeqs)) c.sourceEventSeqs = e.sourceEventSeqs.map((x) => base + x);
        return c;
      });
      for (let i = 0; i < shifted.length; i += 7) await w.append(shifted.slice(i, i + 7));
      seq += shifted.length;
      time = shifted[shifted.length - 1].time + 1000;
    }
  }
  await w.close();
  return seq;
}
