/**
 * `--store`: where sessions live. Absent: local files under --data (the
 * default, SPEC section 3). `s3://bucket/prefix`: an S3 store
 * (docs/s3-layout.md), its endpoint, region and credentials from the usual
 * AWS environment variables (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL,
 * AWS_REGION or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; without keys, the SDK's own
 * chain). A writer's unsealed tails then live under <data>/s3-tail/.
 * SESSION_PAGER_S3_FRESH_MS: how long a reader reuses what it read of a
 * session before looking at the store again (default 100 ms; 0: always).
 */
import { join } from 'node:path';
import type { StorageBackend } from '../../storage/backend.js';
import { LocalBackend } from '../../storage/local/local-backend.js';
import { isS3Url, parseS3Url } from '../../storage/s3/store-url.js';
import type { OptionDecl } from './command.js';
import { CliError } from './common.js';

export const STORE = {
  type: 'string',
  arg: 'URL',
  env: 'SESSION_PAGER_STORE',
  describe: 'where sessions live: s3://bucket/prefix (endpoint and credentials from AWS_* variables); local files under --data when absent',
  defaultText: 'local files under --data',
} as const satisfies OptionDecl;

/** Whether `--store` names a remote store (then --data holds only writers' tails). */
export function isRemoteStore(store: string | undefined): boolean {
  return store !== undefined && store !== '';
}

/** The backend `--store` names (null: local files under --data). The S3 client loads only then (it costs start-up time). */
export async function storageFromFlag(store: string | undefined, dataDir: string, env: NodeJS.ProcessEnv): Promise<StorageBackend | null> {
  if (store === undefined || store === '') return null;
  if (!isS3Url(store)) throw new CliError(`--store must be an s3://bucket/prefix URL, got ${JSON.stringify(store)}`);
  let loc;
  try {
    loc = parseS3Url(store);
  } catch (err) {
    throw new CliError(`--store: ${(err as Error).message}`);
  }
  // The SDK warns about its own future Node versions on stderr; this one is pinned for Node 20.
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined;
  const id = env.AWS_ACCESS_KEY_ID;
  const secret = env.AWS_SECRET_ACCESS_KEY;
  const credentials = id && secret ? { accessKeyId: id, secretAccessKey: secret, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } : undefined;
  const [{ S3Backend }, { S3ObjectStore }] = await Promise.all([import('../../storage/s3/s3-backend.js'), import('../../storage/s3/s3-client.js')]);
  const objects = new S3ObjectStore({ bucket: loc.bucket, ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}), ...(credentials ? { credentials } : {}) });
  // How long a reader reuses a session's manifest before looking again (ms; 0: every look goes to the store).
  const fresh = Number(env.SESSION_PAGER_S3_FRESH_MS ?? '');
  const freshMs = env.SESSION_PAGER_S3_FRESH_MS !== undefined && env.SESSION_PAGER_S3_FRESH_MS !== '' && Number.isFinite(fresh) && fresh >= 0 ? fresh : undefined;
  return new S3Backend({ objects, location: loc, tailDir: join(dataDir, 's3-tail', loc.bucket, loc.prefix === '' ? '_' : loc.prefix), ...(freshMs !== undefined ? { freshMs } : {}) });
}

/**
 * The backend a maintenance command (import, gen, doctor, reindex, repair)
 * works on: `--store`'s, else local files under --data. `work` runs with
 * it; the backend is closed after (an S3 writer's sessions sealed and given
 * back), also when `work` fails.
 */
export async function withStorage<T>(store: string | undefined, dataDir: string, env: NodeJS.ProcessEnv, work: (storage: StorageBackend) => Promise<T>): Promise<T> {
  const storage: StorageBackend = (await storageFromFlag(store, dataDir, env)) ?? new LocalBackend(dataDir);
  try {
    return await work(storage);
  } finally {
    await storage.close?.();
  }
}
