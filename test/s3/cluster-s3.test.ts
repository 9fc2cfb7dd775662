/**
 * loadtest/cluster.mjs's scenario over S3 (Ceph RGW from `npm run
 * test:s3`): one writer and two reader processes over one bucket prefix,
 * follow by Redis (the only way a reader hears of appends there: no file to
 * watch). Every reader's pages equal the reference after every append; a
 * follower on each reader gets every event once and in order; a killed
 * reader loses nothing; a killed writer's acknowledged events are all
 * readable after its restart; a second writer is fenced (session_busy).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { runSmallCluster } from '../helpers/cluster-run.js';
import { s3Request } from '../../scripts/services.mjs';

type Req = (creds: object, method: string, path: string, opts?: { query?: Record<string, string> }) => Promise<Response>;

const bucket = process.env.SESSION_PAGER_TEST_S3_BUCKET as string;
const redisUrl = process.env.SESSION_PAGER_TEST_REDIS_URL as string;
const prefix = `cluster-${randomUUID()}`;
const creds = {
  endpoint: process.env.SESSION_PAGER_TEST_S3_ENDPOINT as string,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID as string,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY as string,
  region: process.env.AWS_REGION ?? 'us-east-1',
};

afterAll(async () => {
  // Remove what the run left under its prefix (a listing returns at most 1,000 keys).
  for (let round = 0; round < 100; round++) {
    const list = await (s3Request as Req)(creds, 'GET', `/${bucket}`, { query: { 'list-type': '2', prefix: `${prefix}/` } });
    const keys = [...(await list.text()).matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1] as string);
    if (keys.length === 0) break;
    for (const k of keys) await (s3Request as Req)(creds, 'DELETE', `/${bucket}/${k.split('/').map(encodeURIComponent).join('/')}`);
  }
});

describe('a writer and two readers over one S3 bucket', () => {
  it('pages equal the reference on every reader; followers lose nothing across reader and writer kills; a second writer is fenced', async () => {
    expect(redisUrl).toMatch(/^redis:\/\//);
    await runSmallCluster(['--store', `s3://${bucket}/${prefix}`], redisUrl, 11);
  }, 300_000);
});
