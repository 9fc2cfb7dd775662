/**
 * Every storage backend the compliance suite runs against, each made fresh
 * per test file and cleaned up after: the local one in a temp data
 * directory, the in-memory one, and the S3 one over an in-memory object
 * store (the volume logic, manifests, segments, leases: on every run).
 * `s3EndpointBackend` is the S3 one over a real endpoint, for the suites
 * under test/s3/ (SESSION_PAGER_TEST_S3_ENDPOINT and the AWS_* keys, as
 * `npm run test:s3` sets them for the local Ceph RGW; bucket
 * SESSION_PAGER_TEST_S3_BUCKET, made when missing; each store under a fresh
 * prefix, removed after).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StorageBackend } from '../../src/storage/backend.js';
import { LocalBackend } from '../../src/storage/local/local-backend.js';
import { MemoryBackend } from '../../src/storage/memory/memory-backend.js';
import { MemoryObjectStore, type ObjectStore } from '../../src/storage/s3/object-store.js';
import { S3Backend, type S3BackendOptions } from '../../src/storage/s3/s3-backend.js';
import { S3ObjectStore } from '../../src/storage/s3/s3-client.js';

export interface BackendUnderTest {
  name: string;
  /** A test's time limit when longer than the default (a network store's round trips add up). */
  timeoutMs?: number;
  /** A fresh, empty store; `dispose` removes whatever it left. */
  make(): { storage: StorageBackend; dispose(): Promise<void> };
}

/** The S3 endpoint tests may use, from the environment (null: none configured). */
export function testS3Endpoint(): { endpoint: string; bucket: string; credentials: { accessKeyId: string; secretAccessKey: string } } | null {
  const endpoint = process.env.SESSION_PAGER_TEST_S3_ENDPOINT;
  const accessKeyId = process.env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
  if (endpoint === undefined || endpoint === '' || accessKeyId === undefined || secretAccessKey === undefined) return null;
  return { endpoint, bucket: process.env.SESSION_PAGER_TEST_S3_BUCKET ?? 'session-pager-test', credentials: { accessKeyId, secretAccessKey } };
}

// The SDK warns on stderr about Node versions its later releases need; this one is pinned for Node 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const madeBuckets = new Set<string>();

/** An S3 object store on the configured endpoint, its bucket made when missing. */
export async function testS3Store(): Promise<S3ObjectStore> {
  const cfg = testS3Endpoint();
  if (cfg === null) throw new Error('no S3 endpoint configured');
  const store = new S3ObjectStore({ bucket: cfg.bucket, endpoint: cfg.endpoint, credentials: cfg.credentials });
  if (!madeBuckets.has(cfg.bucket)) {
    const { CreateBucketCommand } = await import('@aws-sdk/client-s3');
    await store.client.send(new CreateBucketCommand({ Bucket: cfg.bucket })).catch((err: { name?: string }) => {
      if (err.name !== 'BucketAlreadyOwnedByYou' && err.name !== 'BucketAlreadyExists') throw err;
    });
    madeBuckets.add(cfg.bucket);
  }
  return store;
}

/** An S3 backend over `objects` under a fresh prefix, its tail folder in a temp directory. Small segments, so tests seal. */
export function makeS3Backend(objects: ObjectStore, opts: Partial<S3BackendOptions> = {}): { storage: S3Backend; tailDir: string; prefix: string; dispose(): Promise<void> } {
  const tailDir = mkdtempSync(join(tmpdir(), 'sp-s3tail-'));
  const prefix = opts.location?.prefix ?? `t-${randomUUID()}`;
  const storage = new S3Backend({ objects, location: { bucket: 'b', prefix }, tailDir, segmentBytes: 4096, maxSegmentBytes: 16384, sealAgeMs: 2_000, ...opts });
  return {
    storage,
    tailDir,
    prefix,
    async dispose() {
      await storage.close();
      rmSync(tailDir, { recursive: true, force: true });
      const names = (await objects.list(`${prefix}/`)).names;
      await objects.remove(names);
    },
  };
}

export const BACKENDS: BackendUnderTest[] = [
  {
    name: 'local',
    make() {
      const dir = mkdtempSync(join(tmpdir(), 'sp-backend-'));
      return { storage: new LocalBackend(dir), dispose: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'memory',
    make() {
      return { storage: new MemoryBackend(), dispose: async () => undefined };
    },
  },
  {
    name: 's3 (in-memory object store)',
    make() {
      return makeS3Backend(new MemoryObjectStore());
    },
  },
];

/** The S3 backend over the configured endpoint (test/s3/ only; the store is made on first use). */
export function s3EndpointBackend(): BackendUnderTest {
  let objects: S3ObjectStore | null = null;
  const lazy: ObjectStore = {
    get: async (...a) => (objects ??= await testS3Store()).get(...a),
    getAll: async (...a) => (objects ??= await testS3Store()).getAll(...a),
    put: async (...a) => (objects ??= await testS3Store()).put(...a),
    list: async (...a) => (objects ??= await testS3Store()).list(...a),
    remove: async (...a) => (objects ??= await testS3Store()).remove(...a),
  };
  return { name: 's3 (endpoint)', timeoutMs: 300_000, make: () => makeS3Backend(lazy) };
}
