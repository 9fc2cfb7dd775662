/**
 * The ObjectStore over S3's HTTP API (@aws-sdk/client-s3), as Ceph RGW and
 * AWS speak it. Settings RGW needs (learned on RGW 16.2): path-style
 * addressing, and checksums only when an operation requires them (else
 * streamed PUTs get 411). Credentials and the endpoint come from the
 * caller (the CLI reads the usual AWS_* environment variables); with none
 * given, the SDK's own chain (environment, profile) applies.
 */
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { ObjectExists, ObjectNotFound, type ListResult, type ObjectStore } from './object-store.js';

export interface S3ClientOptions {
  bucket: string;
  /** e.g. http://127.0.0.1:7480 (AWS_ENDPOINT_URL); absent: AWS's own endpoints. */
  endpoint?: string;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isMissing(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(err) === 404;
}

export class S3ObjectStore implements ObjectStore {
  readonly client: S3Client;
  readonly bucket: string;

  constructor(opts: S3ClientOptions) {
    this.bucket = opts.bucket;
    this.client = new S3Client({
      region: opts.region ?? 'us-east-1',
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
      ...(opts.credentials !== undefined ? { credentials: opts.credentials } : {}),
    });
  }

  async get(name: string, start: number, end: number): Promise<Buffer> {
    if (end <= start) return Buffer.alloc(0);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: name, Range: `bytes=${start}-${end - 1}` }));
      return Buffer.from((await r.Body?.transformToByteArray()) ?? new Uint8Array());
    } catch (err) {
      if (isMissing(err)) throw new ObjectNotFound(name);
      // A range starting at or past the end: nothing there.
      if (statusOf(err) === 416) return Buffer.alloc(0);
      throw err;
    }
  }

  async getAll(name: string): Promise<Buffer> {
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: name }));
      return Buffer.from((await r.Body?.transformToByteArray()) ?? new Uint8Array());
    } catch (err) {
      if (isMissing(err)) throw new ObjectNotFound(name);
      throw err;
    }
  }

  async put(name: string, data: Uint8Array, opts: { ifAbsent?: boolean } = {}): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: name, Body: data, ContentLength: data.length, ...(opts.ifAbsent === true ? { IfNoneMatch: '*' } : {}) }));
    } catch (err) {
      // 412: another PUT made the name first. (409: a conditional PUT racing another in flight, as S3 says it.)
      if (opts.ifAbsent === true && (statusOf(err) === 412 || statusOf(err) === 409)) throw new ObjectExists(name);
      throw err;
    }
  }

  async list(prefix: string, opts: { startAfter?: string; delimiter?: string } = {}): Promise<ListResult> {
    const names: string[] = [];
    const folders: string[] = [];
    let token: string | undefined;
    do {
      const r: ListObjectsV2CommandOutput = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(opts.startAfter !== undefined ? { StartAfter: opts.startAfter } : {}),
          ...(opts.delimiter !== undefined ? { Delimiter: opts.delimiter } : {}),
          ...(token !== undefined ? { ContinuationToken: token } : {}),
        }),
      );
      for (const c of r.Contents ?? []) if (c.Key !== undefined) names.push(c.Key);
      for (const p of r.CommonPrefixes ?? []) if (p.Prefix !== undefined) folders.push(p.Prefix);
      token = r.IsTruncated === true ? r.NextContinuationToken : undefined;
    } while (token !== undefined);
    return { names, folders };
  }

  async remove(names: string[]): Promise<void> {
    // One DELETE per name, 16 at a time: DeleteObjects needs a body checksum that RGW 16.2 may not take.
    for (let i = 0; i < names.length; i += 16) {
      await Promise.all(names.slice(i, i + 16).map((Key) => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }))));
    }
  }

  destroy(): void {
    this.client.destroy();
  }
}
