/**
 * Errors the client raises. Server errors keep the SPEC's `code` (section 6)
 * and HTTP status; what the client itself detects has its own codes:
 * `invalid_page` (a page or event that breaks SPEC sections 2 and 4),
 * `continuity` (a gap or an overlap a journal must not accept), `protocol`
 * (a Server-Sent-Events stream that is not what the SPEC says) and
 * `network` (no answer at all).
 */
export type ClientErrorCode = 'invalid_page' | 'continuity' | 'protocol' | 'network' | (string & {});

export class ClientError extends Error {
  readonly code: ClientErrorCode;
  /** HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** Seconds, from `Retry-After` or the error body, when the server gave one. */
  readonly retryAfter: number | undefined;
  /** The error body's extra keys (`param`, `expectedSeq`, …). */
  readonly details: Record<string, unknown>;

  constructor(code: ClientErrorCode, message: string, opts: { status?: number; retryAfter?: number; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ClientError';
    this.code = code;
    this.status = opts.status;
    this.retryAfter = opts.retryAfter;
    this.details = opts.details ?? {};
  }
}

/** Parse a `Retry-After` header: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(raw: string | null, now = Date.now()): number | undefined {
  if (raw === null) return undefined;
  const s = raw.trim();
  if (/^[0-9]+$/.test(s)) return Number(s);
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : Math.max(0, Math.ceil((t - now) / 1000));
}

/** The ClientError for a non-2xx response, from its SPEC error body when it has one. */
export async function errorFromResponse(res: Response): Promise<ClientError> {
  const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
  let text = '';
  try {
    text = await res.text();
  } catch {
    // The body is gone; the status still says what happened.
  }
  let code = `http_${res.status}`;
  let message = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
  let details: Record<string, unknown> = {};
  try {
    const body = JSON.parse(text) as { error?: Record<string, unknown> };
    const e = body?.error;
    if (e !== undefined && typeof e === 'object' && e !== null && typeof e.code === 'string') {
      code = e.code;
      if (typeof e.message === 'string') message = e.message;
      const { code: _c, message: _m, ...rest } = e;
      details = rest;
    }
  } catch {
    if (text.length > 0) message += `: ${text.slice(0, 200)}`;
  }
  return new ClientError(code, message, { status: res.status, ...(retryAfter === undefined ? {} : { retryAfter }), details });
}
