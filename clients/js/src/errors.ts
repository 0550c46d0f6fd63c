/**
 * Errors as typed exceptions: one class per status the API documents (docs/API.md, "Errors"),
 * all of them a `LeaderboardError` carrying the status, the machine-readable `code` (absent
 * on the gateway's own 401/403/404, which carry only `message`) and the whole error body.
 */

/** The error body the API answers: `message` always, `code` on the service's own errors, and
 *  where useful the field(s) or identifiers involved. */
export interface ErrorBody {
  message: string;
  code?: string;
  field?: string;
  fields?: string[];
  board_id?: string;
  player_id?: string;
  period?: string;
  region?: string;
  store?: string;
  retry_after?: number;
  reason?: string;
  [key: string]: unknown;
}

export class LeaderboardError extends Error {
  /** The HTTP status; 0 when no answer came (see `NetworkError`). */
  readonly status: number;
  /** `bad_request`, `not_found`, `rate_limited`, ...; undefined on the gateway's own answers. */
  readonly code: string | undefined;
  /** The error body as the API sent it. */
  readonly body: ErrorBody;
  /** Seconds the answer's `Retry-After` header asked for (429, 503), if any. */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ErrorBody, retryAfter?: number) {
    super(body.message || `HTTP ${status}`);
    this.name = new.target.name;
    this.status = status;
    this.code = typeof body.code === "string" ? body.code : undefined;
    this.body = body;
    this.retryAfter = retryAfter;
  }

  /** The offending field, query parameter or header, when the API names one. */
  get field(): string | undefined {
    return typeof this.body.field === "string" ? this.body.field : undefined;
  }

  /** Unknown fields or parameters (400), or immutable rules (409). */
  get fields(): string[] {
    return Array.isArray(this.body.fields) ? this.body.fields : [];
  }
}

/** 400 `bad_request`: malformed input, unknown field or parameter. */
export class BadRequest extends LeaderboardError {}
/** 401: no token, or one the API refuses. */
export class Unauthorized extends LeaderboardError {}
/** 403: a missing scope, or a player acting for someone else. */
export class Forbidden extends LeaderboardError {}
/** 404: unknown board, player, region or period (or route). */
export class NotFound extends LeaderboardError {}
/** 409 `conflict` or `tournament_rules` (see `reason`). */
export class Conflict extends LeaderboardError {
  /** With `tournament_rules`: `not_started`, `ended`, `not_joined`, `full`, `attempts_exhausted`. */
  get reason(): string | undefined {
    return typeof this.body.reason === "string" ? this.body.reason : undefined;
  }
}
/** 413 `payload_too_large`. */
export class PayloadTooLarge extends LeaderboardError {}
/** 422 `unprocessable` (the board's rules) or `rejected_by_hook` (its validation hook). */
export class Unprocessable extends LeaderboardError {}
/** 429 `rate_limited`: thrown once the retries (if any) are used up. */
export class RateLimited extends LeaderboardError {}
/** 503 `unavailable`, `hook_unavailable`, or the gateway's own 503: thrown once the retries
 *  are used up. Safe to retry a submission with the same idempotency key. */
export class Unavailable extends LeaderboardError {}
/** Any other status (a 5xx other than 503 is a bug of the service). */
export class UnexpectedStatus extends LeaderboardError {}
/** No answer: the network failed or the request timed out (`status` 0). */
export class NetworkError extends LeaderboardError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(0, { message });
    if (options && "cause" in options) (this as { cause?: unknown }).cause = options.cause;
  }
}

const BY_STATUS: Record<number, new (status: number, body: ErrorBody, retryAfter?: number) => LeaderboardError> = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  422: Unprocessable,
  429: RateLimited,
  503: Unavailable,
};

/** The typed error for an answer with `status` and (parsed) `body`. */
export function errorFor(status: number, body: unknown, retryAfter?: number): LeaderboardError {
  const errorBody: ErrorBody =
    body && typeof body === "object" && !Array.isArray(body)
      ? { ...(body as Record<string, unknown>), message: String((body as ErrorBody).message ?? "") }
      : { message: typeof body === "string" ? body : "" };
  const Type = BY_STATUS[status] ?? UnexpectedStatus;
  return new Type(status, errorBody, retryAfter);
}
