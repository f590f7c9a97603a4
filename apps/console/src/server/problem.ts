import { AppError, toProblem } from "@tick/core";
import { isCommitOutcomeUnknown, isDatabaseUnavailable } from "@tick/db";

/**
 * A lost database connection, told truthfully: during COMMIT the write may have happened (outcome_unknown);
 * at any earlier point the transaction was rolled back and nothing was changed (database_unavailable).
 * Every API write runs in inTransaction or prismaTransaction, which tell the two apart. `retry` is what the
 * caller should do about it (a create: repeat with the same Idempotency-Key); anything else passes through.
 * The one mapping: the route wrapper applies it to every error, job creation with its own advice.
 */
export function mapDatabaseLoss(err: unknown, retry = "Read the resource to find out, or repeat the request (a repeat is answered as one)."): unknown {
  if (err instanceof AppError) return err;
  if (isCommitOutcomeUnknown(err)) {
    return new AppError("outcome_unknown", `The database connection was lost while the change was committing: it may or may not have been made. ${retry}`, {
      retryAfterSeconds: 5,
      cause: err,
    });
  }
  if (isDatabaseUnavailable(err)) {
    return new AppError("database_unavailable", "The database is unreachable; nothing was changed. Retry later.", { retryAfterSeconds: 5, cause: err });
  }
  return err;
}

/** An API answer before it is sent: made into a Web Response by Next's routes, written to Node's response by direct-api.ts. */
export interface ApiAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON text, or a stream sent as it is. */
  body: string | ReadableStream<Uint8Array>;
}

export const answerToResponse = (answer: ApiAnswer): Response => new Response(answer.body, { status: answer.status, headers: answer.headers });

/** Every API error leaves through here as application/problem+json (RFC 9457). */
export function problemAnswer(err: unknown, instance?: string): ApiAnswer {
  const mapped = mapDatabaseLoss(err);
  const problem = toProblem(mapped, instance);
  const headers: Record<string, string> = { "content-type": "application/problem+json", "cache-control": "no-store" };
  if (mapped instanceof AppError && mapped.retryAfterSeconds !== undefined) {
    headers["retry-after"] = String(Math.max(1, Math.ceil(mapped.retryAfterSeconds)));
  }
  // Errors may carry response headers (e.g. RateLimit-* on a 429).
  const extraHeaders = (mapped as { headers?: Record<string, string> }).headers;
  if (extraHeaders && typeof extraHeaders === "object") for (const [k, v] of Object.entries(extraHeaders)) headers[k.toLowerCase()] = v;
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

export const problemResponse = (err: unknown, instance?: string): Response => answerToResponse(problemAnswer(err, instance));
