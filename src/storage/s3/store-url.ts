/**
 * `--store s3://bucket/prefix`: where an S3 store's sessions live. The
 * bucket follows S3's naming rule (3-63 lowercase letters, digits, dots and
 * hyphens); the prefix is any `/`-separated path (no empty, `.` or `..`
 * segment), kept without slashes at either end, and every remote name of
 * the store begins with it (docs/s3-layout.md).
 */
export interface S3Location {
  bucket: string;
  /** '' or a path without leading/trailing '/'. */
  prefix: string;
}

const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Whether `text` names an S3 store (and not a local folder). */
export function isS3Url(text: string): boolean {
  return text.startsWith('s3://');
}

export function parseS3Url(text: string): S3Location {
  if (!isS3Url(text)) throw new Error(`not an s3:// URL: ${JSON.stringify(text)}`);
  const rest = text.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash === -1 ? rest : rest.slice(0, slash);
  if (!BUCKET_RE.test(bucket) || bucket.includes('..')) throw new Error(`bad bucket name in ${JSON.stringify(text)}: 3-63 lowercase letters, digits, dots and hyphens`);
  const raw = slash === -1 ? '' : rest.slice(slash + 1).replace(/\/+$/, '');
  if (raw !== '') {
    for (const seg of raw.split('/')) {
      if (seg === '' || seg === '.' || seg === '..') throw new Error(`bad prefix in ${JSON.stringify(text)}: empty, "." or ".." path segment`);
    }
  }
  return { bucket, prefix: raw };
}

/** The remote name of `rel` under the store's prefix. */
export function underPrefix(loc: S3Location, rel: string): string {
  return loc.prefix === '' ? rel : `${loc.prefix}/${rel}`;
}
