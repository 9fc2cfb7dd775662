/**
 * The sessions a load run reads, and each one's last committed seq (the
 * pinned cut of its random pages). The SPEC fixes the catalog's purpose
 * (every session, its status and reason) but not its fields, so a server
 * that speaks the SPEC may list only ids: this service's `lastSeq` or
 * `nextSeq` is used when the catalog has one, else the session's tail page
 * says it (`throughSeq`, which every SPEC server's page carries).
 */
import { ClientError, type SessionEntry, type SessionPagerClient } from '../client/index.js';
import type { Target } from './scenarios.js';

/** Tail pages asked at once for sessions whose catalog line gives no end. */
const LOOKUPS_IN_FLIGHT = 8;

function endFromCatalog(s: Partial<SessionEntry>): number | undefined {
  if (Number.isSafeInteger(s.lastSeq)) return s.lastSeq as number;
  if (Number.isSafeInteger(s.nextSeq)) return (s.nextSeq as number) - 1;
  return undefined;
}

/**
 * Servable sessions with at least one event: the catalog's, less those it
 * marks `repair_required` and those whose tail page is refused (a damaged
 * session a server names only when asked).
 */
export async function sessionTargets(client: SessionPagerClient, catalog: readonly Partial<SessionEntry>[]): Promise<Target[]> {
  const listed = catalog.filter((s): s is Partial<SessionEntry> & { id: string } => typeof s.id === 'string' && s.status !== 'repair_required');
  const ends: (number | undefined)[] = listed.map(endFromCatalog);
  const unknown = listed.map((_, i) => i).filter((i) => ends[i] === undefined);
  const lookup = async () => {
    for (let i = unknown.shift(); i !== undefined; i = unknown.shift()) {
      try {
        ends[i] = (await client.page((listed[i] as { id: string }).id, { maxMessages: 1 })).page.throughSeq;
      } catch (err) {
        if (!(err instanceof ClientError) || err.status === undefined) throw err; // no answer at all: the run cannot start
      }
    }
  };
  await Promise.all(Array.from({ length: LOOKUPS_IN_FLIGHT }, lookup));
  const out: Target[] = [];
  listed.forEach((s, i) => {
    const end = ends[i];
    if (end !== undefined && end >= 0) out.push({ id: s.id, lastSeq: end });
  });
  return out;
}
