/** The S3 backend's own promises (test/helpers/s3-backend-suite.ts) over a real S3 endpoint. */
import { testS3Store } from '../helpers/backends.js';
import { s3BackendSuite } from '../helpers/s3-backend-suite.js';

s3BackendSuite({ name: 'S3 endpoint', make: () => testS3Store() });
