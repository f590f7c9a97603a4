import { AppError, toProblem } from "@tick/core";
import { isDatabaseUnavailable } from "@tick/db";

/** Every API error leaves through here as application/problem+json (RFC 9457). */
export function problemResponse(err: unknown, instance?: string): Response {
  const mapped =
    !(err instanceof AppError) && isDatabaseUnavailable(err)
      ? new AppError("database_unavailable", "The database is unreachable; nothing was changed. Retry later.", {
          retryAfterSeconds: 5,
        })
      : err;
  const problem = toProblem(mapped, instance);
  const headers = new Headers({ "content-type": "application/problem+json", "cache-control": "no-store" });
  if (mapped instanceof AppError && mapped.retryAfterSeconds !== undefined) {
    headers.set("retry-after", String(Math.max(1, Math.ceil(mapped.retryAfterSeconds))));
  }
  // Errors may carry response headers (e.g. RateLimit-* on a 429).
  const extraHeaders = (mapped as { headers?: Record<string, string> }).headers;
  if (extraHeaders && typeof extraHeaders === "object") for (const [k, v] of Object.entries(extraHeaders)) headers.set(k, v);
  return new Response(JSON.stringify(problem), { status: problem.status, headers });
}
