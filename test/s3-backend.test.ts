/**
 * The S3 backend's own promises (test/helpers/s3-backend-suite.ts) over an
 * in-memory object store; test/s3/s3-backend.test.ts runs them against a
 * real S3 endpoint.
 */
import { MemoryObjectStore } from '../src/storage/s3/object-store.js';
import { s3BackendSuite } from './helpers/s3-backend-suite.js';

s3BackendSuite({ name: 'in-memory object store', make: async () => new MemoryObjectStore() });
