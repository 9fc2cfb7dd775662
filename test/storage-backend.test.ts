/**
 * The storage seam's raw contract (test/helpers/backend-contract.ts) against
 * every backend of test/helpers/backends.ts; test/s3/storage-backend.test.ts
 * runs it against a real S3 endpoint.
 */
import { BACKENDS } from './helpers/backends.js';
import { backendContract } from './helpers/backend-contract.js';

for (const b of BACKENDS) backendContract(b);
