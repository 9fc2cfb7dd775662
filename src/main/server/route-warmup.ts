/**
 * The page route asked once per recent session before the server says it is
 * ready, answered 304 (If-None-Match: *): nothing is built and no log byte
 * is read. What that runs is what a fresh process's first page otherwise
 * paid for in full (issue 12, the cold tail page over HTTP): the route's own
 * code run for the first time (hooks, admission, validation, the ETag), and
 * the session's first open (its metadata and sidecar checks, session-state.ts).
 * The open is kept in the store's session views under the objects' stamp and
 * checked against it again by every page, as any cached view is: nothing
 * read here is trusted later without that check.
 *
 * Bounded: the WARM_SESSIONS most recently updated sessions of the catalog
 * (which `serve` lists at start anyway). These requests are this process's
 * own: marked by a nonce only it knows, they are neither counted in the
 * metrics nor logged (isWarmupRequest).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CatalogEntry, Store } from '../store-types.js';

/** Sessions opened ahead: a handful a user is likely to look at first, not the catalog. */
export const WARM_SESSIONS = 8;

const WARMUP_HEADER = 'x-session-pager-warmup';
const nonce = randomUUID();

/** True for the warm-up's own requests (this process's nonce; a client cannot know it). */
export function isWarmupRequest(request: FastifyRequest): boolean {
  return request.headers[WARMUP_HEADER] === nonce;
}

/** The `limit` sessions updated last (those without a time last), servable ones only. */
export function recentSessions(catalog: readonly CatalogEntry[], limit = WARM_SESSIONS): string[] {
  const time = (e: CatalogEntry) => e.updatedAt ?? Number.NEGATIVE_INFINITY;
  return catalog
    .filter((e) => e.status !== 'repair_required')
    .sort((a, b) => time(b) - time(a))
    .slice(0, limit)
    .map((e) => e.id);
}

/**
 * Ask the page route for each recent session, revalidating anything: the
 * answer is a 304 from the session's version alone. Only an optimization:
 * a session that fails (gone, damaged, shed) is skipped. Resolves to the
 * number answered 304.
 */
export async function warmPageRoute(app: FastifyInstance, store: Store, token: string | null, limit = WARM_SESSIONS): Promise<number> {
  const catalog = await store.list().catch(() => []);
  let warmed = 0;
  for (const id of recentSessions(catalog, limit)) {
    const headers: Record<string, string> = { 'if-none-match': '*', [WARMUP_HEADER]: nonce };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const r = await app.inject({ method: 'GET', url: `/v1/sessions/${encodeURIComponent(id)}/page?maxMessages=1`, headers }).catch(() => null);
    if (r?.statusCode === 304) warmed++;
  }
  return warmed;
}
