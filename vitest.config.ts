import { defineConfig } from 'vitest/config';

/**
 * Two projects. `unit`: every suite that needs nothing but this machine
 * (local and in-memory backends, a redis-server the test starts itself).
 * `s3`: the suites under test/s3/, against a real S3 endpoint; it exists
 * only when one is configured (SESSION_PAGER_TEST_S3_ENDPOINT, set by
 * `npm run test:s3`, which starts Ceph RGW itself: scripts/services.mjs),
 * so a plain `npm test` runs it when it can and never reports a skip.
 */
const s3 = process.env.SESSION_PAGER_TEST_S3_ENDPOINT !== undefined && process.env.SESSION_PAGER_TEST_S3_ENDPOINT !== '';

export default defineConfig({
  test: {
    // A temp folder per run; the run fails when a test leaves something in it.
    globalSetup: ['test/global-temp-check.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: ['test/s3/**', '**/node_modules/**'] } },
      ...(s3 ? [{ extends: true, test: { name: 's3', include: ['test/s3/**/*.test.ts'] } }] : []),
    ],
  },
});
