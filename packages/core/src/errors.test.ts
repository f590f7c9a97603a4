import { describe, it, expect } from "vitest";
import { z } from "zod";
import { AppError, ERROR_CODES, isErrorCode, problemFromZodError, problemType, toProblem, type ErrorCode } from "./errors.js";

// Exact statuses and type URIs, written out: these are a public contract, so a change must break a test.
const CASES: [ErrorCode, number, string][] = [
  ["bad_request", 400, "https://tick.dev/problems/bad-request"],
  ["validation_failed", 422, "https://tick.dev/problems/validation-failed"],
  ["unauthorized", 401, "https://tick.dev/problems/unauthorized"],
  ["forbidden", 403, "https://tick.dev/problems/forbidden"],
  ["not_found", 404, "https://tick.dev/problems/not-found"],
  ["conflict", 409, "https://tick.dev/problems/conflict"],
  ["signup_closed", 403, "https://tick.dev/problems/signup-closed"],
  ["insufficient_role", 403, "https://tick.dev/problems/insufficient-role"],
  ["tenant_suspended", 403, "https://tick.dev/problems/tenant-suspended"],
  ["idempotency_key_reused", 422, "https://tick.dev/problems/idempotency-key-reused"],
  ["idempotency_request_in_progress", 409, "https://tick.dev/problems/idempotency-request-in-progress"],
  ["payload_too_large", 413, "https://tick.dev/problems/payload-too-large"],
  ["unsupported_media_type", 415, "https://tick.dev/problems/unsupported-media-type"],
  ["target_not_allowed", 422, "https://tick.dev/problems/target-not-allowed"],
  ["nothing_to_replay", 422, "https://tick.dev/problems/nothing-to-replay"],
  ["rate_limited", 429, "https://tick.dev/problems/rate-limited"],
  ["quota_exceeded", 429, "https://tick.dev/problems/quota-exceeded"],
  ["database_unavailable", 503, "https://tick.dev/problems/database-unavailable"],
  ["outcome_unknown", 503, "https://tick.dev/problems/outcome-unknown"],
  ["service_unavailable", 503, "https://tick.dev/problems/service-unavailable"],
  ["internal", 500, "https://tick.dev/problems/internal"],
];

describe("error codes", () => {
  it("the table is closed: exactly the codes listed here", () => {
    expect(Object.keys(ERROR_CODES).sort()).toEqual(CASES.map(([code]) => code).sort());
  });

  it.each(CASES)("%s → %i %s", (code, status, type) => {
    const err = new AppError(code, `detail for ${code}`);
    expect(err.status).toBe(status);
    expect(problemType(code)).toBe(type);
    expect(toProblem(err, "/api/v1/jobs/1")).toEqual({
      type,
      title: ERROR_CODES[code].title,
      status,
      detail: `detail for ${code}`,
      instance: "/api/v1/jobs/1",
    });
  });

  it("isErrorCode accepts only table keys", () => {
    expect(isErrorCode("not_found")).toBe(true);
    expect(isErrorCode("toString")).toBe(false);
    expect(isErrorCode(404)).toBe(false);
  });
});

describe("AppError", () => {
  it("defaults detail to the title and keeps retryAfter, extra and cause", () => {
    const cause = new Error("ECONNREFUSED 10.0.0.5:5432");
    const err = new AppError("database_unavailable", undefined, { retryAfterSeconds: 5, extra: { tenantId: "t1" }, cause });
    expect(err).toBeInstanceOf(Error);
    expect(err.detail).toBe("Database unavailable");
    expect(err.retryAfterSeconds).toBe(5);
    expect(err.cause).toBe(cause);
    expect(err.message).toBe("database_unavailable: Database unavailable");
    const problem = toProblem(err);
    expect(problem).toEqual({
      type: "https://tick.dev/problems/database-unavailable",
      title: "Database unavailable",
      status: 503,
      detail: "Database unavailable",
      tenantId: "t1",
    });
    expect(JSON.stringify(problem)).not.toContain("ECONNREFUSED");
  });

  it("extension members cannot overwrite standard members", () => {
    const err = new AppError("not_found", "Job j1 not found", { extra: { status: 200, type: "x", jobId: "j1" } });
    expect(toProblem(err)).toMatchObject({ status: 404, type: "https://tick.dev/problems/not-found", jobId: "j1" });
  });
});

describe("toProblem for unknown errors", () => {
  it.each([
    ["an Error", new Error("relation \"jobs\" does not exist at /srv/app/db.ts:42")],
    ["a string", "secret-token-123"],
    ["null", null],
  ])("%s becomes a generic 500 without the internal message", (_name, thrown) => {
    const problem = toProblem(thrown, "/api/v1/jobs");
    expect(problem).toEqual({
      type: "https://tick.dev/problems/internal",
      title: "Internal server error",
      status: 500,
      detail: "An unexpected error occurred.",
      instance: "/api/v1/jobs",
    });
  });
});

describe("problemFromZodError", () => {
  const schema = z.object({
    url: z.url(),
    retry: z.object({ maxAttempts: z.number().int().min(1) }),
    headers: z.array(z.string()),
  });

  it("lists each invalid field with its path", () => {
    const result = schema.safeParse({ url: "nope", retry: { maxAttempts: 0 }, headers: ["ok", 3] });
    if (result.success) throw new Error("expected a validation failure");
    const problem = problemFromZodError(result.error, "/api/v1/jobs");
    expect(problem).toMatchObject({
      type: "https://tick.dev/problems/validation-failed",
      title: "Validation failed",
      status: 422,
      detail: "3 fields are invalid.",
      instance: "/api/v1/jobs",
    });
    const errors = problem.errors as { path: string; message: string }[];
    expect(errors.map((e) => e.path)).toEqual(["url", "retry.maxAttempts", "headers[1]"]);
    for (const e of errors) expect(e.message).toMatch(/\S/);
  });

  it("is what toProblem produces for a thrown ZodError", () => {
    const result = z.object({ name: z.string() }).safeParse({});
    if (result.success) throw new Error("expected a validation failure");
    expect(toProblem(result.error)).toEqual(problemFromZodError(result.error));
    expect(toProblem(result.error)).toMatchObject({ status: 422, detail: "1 field is invalid.", errors: [{ path: "name" }] });
  });
});
