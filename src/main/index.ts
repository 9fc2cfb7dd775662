/**
 * The library entry point (`import { openStore } from 'session-pager'`):
 * the store the HTTP service and the CLI are built on, the writer, the HTTP
 * app factory, and the pure core that defines the wire format.
 */
export { openStore, PagerStore, type StoreOptions, type WarmUpOptions } from './store.js';
export type { FollowOptions } from './event-follow.js';
export type { StorageBackend, RandomReader, WritableFile, WriteMode, Lease, ObjectStat } from '../storage/backend.js';
export { LocalBackend } from '../storage/local/local-backend.js';
export { MemoryBackend } from '../storage/memory/memory-backend.js';
export type { CatalogEntry, PageBuffer, Store, StoreStats, FollowListener } from './store-types.js';
export { SessionWriter, type AppendResult, type WriterOptions } from './session-writer.js';
export { buildServer, shutdown } from './server/index.js';
export { PagerError, type ErrorCode } from '../core/errors.js';
export { packEvents, expandRecords, validateRecord } from '../core/chunk-codec.js';
export type { ChunkRow, Page, PageParams, PageRecord, SessionEvent, SessionHeader, SessionHeaderInit, StorageRecord } from '../core/types.js';
export { readWholeLog, referencePage } from './reference-reader.js';
export { generateSession, type GenerateOptions } from './gen/generate.js';
