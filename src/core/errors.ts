/**
 * Coded errors, in the style of fastify's: every failure the outside world can
 * see carries a stable `code` and the HTTP status it maps to (SPEC section 6).
 */

export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  session_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  session_exists: 409,
  seq_conflict: 409,
  session_busy: 409,
  repair_required: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  corrupt_range: 422,
  header_too_large: 431,
  overloaded: 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class PagerError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'PagerError';
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.details = details;
  }

  toJSON(): { error: { code: ErrorCode; message: string } & Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...(this.details ?? {}) } };
  }
}

export function isPagerError(err: unknown): err is PagerError {
  return err instanceof PagerError;
}

/** A record (event or packed row) that breaks a rule of SPEC section 2. */
export class RecordError extends Error {
  readonly rule: string;
  constructor(rule: string, message: string) {
    super(message);
    this.name = 'RecordError';
    this.rule = rule;
  }
}
