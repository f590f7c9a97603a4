import { z } from "zod";

/**
 * The one API error model: a closed set of codes, each mapped to exactly one HTTP status here, rendered as
 * RFC 9457 `application/problem+json`. Services throw AppError; the route wrapper calls toProblem().
 * A lost database connection is mapped to AppError (database_unavailable, outcome_unknown) by the console (its
 * server/problem.ts: mapDatabaseLoss, with the db package telling the two apart), not here.
 */
export const ERROR_CODES = {
  bad_request: { status: 400, title: "Bad request" },
  validation_failed: { status: 422, title: "Validation failed" },
  unauthorized: { status: 401, title: "Missing or invalid credentials" },
  forbidden: { status: 403, title: "Forbidden" },
  not_found: { status: 404, title: "Not found" },
  conflict: { status: 409, title: "Conflict" },
  // Sign-up refused by the deployment's TICK_SIGNUP mode (closed, or by invitation only).
  signup_closed: { status: 403, title: "Sign-up is closed" },
  // The principal's role (a person's, or an API key's: its maker's) is below what the action needs, whatever
  // its scopes say: e.g. an admin, or a key an admin made, making or removing an owner.
  insufficient_role: { status: 403, title: "Role too low for this action" },
  // A platform operator suspended the tenant: its keys and sessions are refused; its jobs wait.
  tenant_suspended: { status: 403, title: "Tenant suspended" },
  // 422, not 409, following the IETF Idempotency-Key draft: resending will never succeed (the key is bound
  // to another body), whereas 409 is kept for "in progress", which a client should simply retry later.
  idempotency_key_reused: { status: 422, title: "Idempotency-Key reused with a different request body" },
  idempotency_request_in_progress: { status: 409, title: "A request with this Idempotency-Key is still in progress" },
  payload_too_large: { status: 413, title: "Payload too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  // A job target or callback URL that points where tenants may not send requests (SSRF protection).
  target_not_allowed: { status: 422, title: "Target address not allowed" },
  // A DLQ replay whose filter matches no dead job that another replay does not already hold.
  nothing_to_replay: { status: 422, title: "Nothing to replay" },
  rate_limited: { status: 429, title: "Rate limit exceeded" },
  quota_exceeded: { status: 429, title: "Quota exceeded" },
  database_unavailable: { status: 503, title: "Database unavailable" },
  // The connection broke while a write was committing: it may or may not have taken effect. Distinct from
  // database_unavailable (nothing was changed) so a client never mistakes one for the other.
  outcome_unknown: { status: 503, title: "Outcome unknown" },
  service_unavailable: { status: 503, title: "Service unavailable" },
  internal: { status: 500, title: "Internal server error" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_CODES, value);
}

/** Stable problem `type` URI; clients switch on it, so it never changes once published. */
export function problemType(code: ErrorCode): string {
  return `https://tick.dev/problems/${code.replaceAll("_", "-")}`;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  [extension: string]: unknown;
}

export interface AppErrorOptions {
  /** Sent as the Retry-After header by the route wrapper (429, 503). */
  retryAfterSeconds?: number;
  /** RFC 9457 extension members, merged into the problem body. */
  extra?: Record<string, unknown>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  /** Shown to the API client: must not contain secrets or internals. */
  readonly detail: string;
  readonly retryAfterSeconds?: number;
  readonly extra?: Record<string, unknown>;

  constructor(code: ErrorCode, detail?: string, options: AppErrorOptions = {}) {
    const text = detail ?? ERROR_CODES[code].title;
    super(`${code}: ${text}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.detail = text;
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
    if (options.extra !== undefined) this.extra = options.extra;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

function buildProblem(code: ErrorCode, detail: string, instance?: string, extra?: Record<string, unknown>): Problem {
  const { status, title } = ERROR_CODES[code];
  // Extensions first, so they can never overwrite the standard members.
  const problem: Problem = { ...extra, type: problemType(code), title, status, detail };
  if (instance !== undefined) problem.instance = instance;
  return problem;
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => {
    if (typeof key === "number") return `${acc}[${key}]`;
    const name = String(key);
    return acc === "" ? name : `${acc}.${name}`;
  }, "");
}

export function problemFromZodError(error: z.ZodError, instance?: string): Problem {
  const errors = error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
  const detail = errors.length === 1 ? "1 field is invalid." : `${errors.length} fields are invalid.`;
  return buildProblem("validation_failed", detail, instance, { errors });
}

/** The single mapper from anything thrown to a problem body. Unknown errors never leak their message. */
export function toProblem(err: unknown, instance?: string): Problem {
  if (err instanceof AppError) return buildProblem(err.code, err.detail, instance, err.extra);
  if (err instanceof z.ZodError) return problemFromZodError(err, instance);
  return buildProblem("internal", "An unexpected error occurred.", instance);
}
