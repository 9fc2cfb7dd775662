/**
 * What a page request is answered (SPEC sections 4-6: the page, its ETag and
 * Cache-Control, 304 on If-None-Match), apart from how it is written: the page
 * route (routes.ts, through fastify) and the direct page path (fast-page.ts,
 * node's response) both take it from here, so the two cannot answer differently.
 */
import type { ServerResponse } from 'node:http';
import { resolvePageParams } from '../../core/page-rule.js';
import type { PageParams } from '../../core/types.js';
import type { PageBuffer, PageSignal, Store } from '../store-types.js';
import type { ServerMetrics } from './metrics.js';
import type { ResolvedOptions } from './options.js';
import { bodyDigest, etagFor, noneMatch, notModifiedTag, pageDigest } from './page-caching.js';
import { levelFor, negotiate, type PageEncoder } from './page-encoding.js';

export const PAGE_ROUTE = '/v1/sessions/:id/page';

export interface PageAnswerContext {
  store: Store;
  metrics: ServerMetrics;
  encoder: PageEncoder;
  compression: ResolvedOptions['compression'];
}

/** The request's part of a page answer. */
export interface PageAsk {
  id: string;
  params: PageParams;
  acceptEncoding: string | string[] | undefined;
  ifNoneMatch: string | string[] | undefined;
  signal: PageSignal | undefined;
  /** The response: a built body's memory is handed back once it has closed (PageBuffer.release). */
  res: ServerResponse;
  /** The response was given meanwhile (a timeout answered, the client went away): nothing more to write. */
  answered: () => boolean;
  /** Count 304s (the server's own warm-up requests are not counted). */
  counted: boolean;
  /**
   * Where the built body's release goes when the caller calls it itself as the response closes
   * (fast-page.ts: its one 'close' listener); absent: a 'close' listener of its own calls it.
   */
  bodyHolder?: { releaseBody: (() => void) | undefined };
}

export type PageAnswer =
  | { status: 304; etag: string | null; pinned: boolean }
  | { status: 200; etag: string; pinned: boolean; body: Buffer; encoding: string | null; pb: PageBuffer };

/** The page's answer, or null when the response was given meanwhile. */
export async function answerPage(c: PageAnswerContext, a: PageAsk): Promise<PageAnswer | null> {
  const { store, metrics } = c;
  const { id, params } = a;
  // The coding depends on Accept-Encoding alone (not on the page's size); the digest If-None-Match is compared with is known before the page.
  const encoding = negotiate(a.acceptEncoding);
  const pinned = params.throughSeq !== undefined;
  const version = store.pageVersion === undefined ? undefined : await store.pageVersion(id, params.throughSeq);
  // The page is built from the reads this version came from (Store.pageBuffer): its cut is this one.
  let asked: { throughSeq: number; digest: string } | null = null;
  if (version !== undefined && version.servable) {
    const r = resolvePageParams(params, version.nextSeq - 1);
    asked = { throughSeq: r.throughSeq, digest: pageDigest(id, version.incarnation, r) };
    const matched = noneMatch(a.ifNoneMatch, asked.digest, encoding);
    if (matched !== null) {
      // Not built, not read: the client holds these identity bytes (in some coding: weak comparison).
      if (a.counted) metrics.notModified.inc({ route: PAGE_ROUTE });
      return { status: 304, etag: notModifiedTag(matched, asked.digest, encoding), pinned };
    }
  }
  // Built in that coding: gzip and zstd by the page workers as they build its slices; kept with the prepared page.
  const pb = await store.pageBuffer(id, params, a.signal, encoding === null ? undefined : { encoding, levels: c.compression }, version);
  // The body's memory may take a later page only once the response is done with it: 'close'
  // comes after the socket's last write has completed (or been cancelled with the socket). A
  // response already closed (the client left, a timeout answered) never releases: the body is
  // then the collector's, which is always safe.
  const res = a.res;
  if (pb.release !== undefined && !res.destroyed && !res.writableFinished) {
    if (a.bodyHolder !== undefined) a.bodyHolder.releaseBody = pb.release;
    else res.once('close', pb.release);
  }
  if (a.answered()) return null; // timed out or the client went away meanwhile
  metrics.observePage(PAGE_ROUTE, pb);
  // The tag of what was built: an append since the check above moved an unpinned cut.
  const digest =
    version === undefined ? bodyDigest(pb.body) : asked !== null && asked.throughSeq === pb.throughSeq ? asked.digest : pageDigest(id, version.incarnation, resolvePageParams(params, pb.throughSeq));
  if (version === undefined) {
    const matched = noneMatch(a.ifNoneMatch, digest, encoding);
    if (matched !== null) {
      metrics.notModified.inc({ route: PAGE_ROUTE });
      return { status: 304, etag: notModifiedTag(matched, digest, encoding), pinned };
    }
  }
  // Compressed forms are kept with the prepared page, so a cached page is compressed once, not
  // per request. A store that gave none: in one stream here, at the level for the body's length.
  const form =
    encoding === null
      ? null
      : pb.encoded?.encoding === encoding
        ? pb.encoded
        : { encoding, body: await c.encoder.encode(pb.body, encoding), level: levelFor(encoding, pb.body.length, c.compression), pieces: null };
  if (a.answered()) return null;
  // The coded tag names the form's level and cuts (page-caching.ts): one tag, one byte sequence.
  return { status: 200, etag: etagFor(digest, form), pinned, body: form === null ? pb.body : form.body, encoding: form === null ? null : form.encoding, pb };
}
