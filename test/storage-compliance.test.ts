/**
 * The storage compliance suite (test/helpers/compliance-suite.ts) against
 * every backend of test/helpers/backends.ts: local files, memory, and the S3
 * backend over an in-memory object store. test/s3/storage-compliance.test.ts
 * runs it against a real S3 endpoint.
 */
import { BACKENDS } from './helpers/backends.js';
import { complianceSuite } from './helpers/compliance-suite.js';

for (const b of BACKENDS) complianceSuite(b);
