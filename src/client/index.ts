/**
 * `session-pager/client`: the HTTP API's client for Node and browsers
 * (fetch, ReadableStream, TextDecoder, AbortController; nothing Node-only).
 */
export { SessionPagerClient, type ClientOptions, type PageQuery, type RequestOptions, type SessionEntry, type AppendResult } from './client.js';
export { Follower, type FollowItem, type FollowOptions, type FollowStats } from './follow.js';
export { ClientError, type ClientErrorCode, parseRetryAfter } from './errors.js';
export { checkPage, type CheckedPage, type PageExpectation } from './page-check.js';
export { checkJoin, place, type Placement } from './continuity.js';
export { SseParser, type SseFrame } from './sse.js';
export { expandRecords, packEvents } from '../core/chunk-codec.js';
export type { ChunkRow, Page, PageRecord, SessionEvent, SessionHeader } from '../core/types.js';
