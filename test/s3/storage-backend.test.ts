/** The storage seam's raw contract (test/helpers/backend-contract.ts) against the S3 backend over a real S3 endpoint. */
import { s3EndpointBackend } from '../helpers/backends.js';
import { backendContract } from '../helpers/backend-contract.js';

backendContract(s3EndpointBackend());
