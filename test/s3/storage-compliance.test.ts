/** The storage compliance suite (test/helpers/compliance-suite.ts) against the S3 backend over a real S3 endpoint. */
import { s3EndpointBackend } from '../helpers/backends.js';
import { complianceSuite } from '../helpers/compliance-suite.js';

complianceSuite(s3EndpointBackend());
