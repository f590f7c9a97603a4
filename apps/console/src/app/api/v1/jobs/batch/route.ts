import { AppError, idempotencyKeySchema } from "@tick/core";
import { getJobDeps } from "@/server/api/deps";
import { rateLimitHeaders } from "@/server/api/admission";
import { apiRoute } from "@/server/api/route";
import { createJobs } from "@/server/services/jobs";
import { endCreateSpan, traceCreate } from "@/server/tracing";

export const dynamic = "force-dynamic";

export const POST = apiRoute(
  "createJobsBatch",
  async ({ principal, body, request }) => {
    // Items are validated one by one so one bad item does not sink the other 999.
    const raw = body as { jobs?: unknown } | null;
    if (!raw || typeof raw !== "object" || !Array.isArray(raw.jobs) || raw.jobs.length < 1 || raw.jobs.length > 1000) {
      throw new AppError("validation_failed", "Send { \"jobs\": [...] } with 1 to 1,000 jobs.", {
        extra: { errors: [{ path: "jobs", message: "must be an array of 1 to 1000 jobs" }] },
      });
    }
    const items = raw.jobs.map((item) => {
      const { idempotencyKey, ...input } = (item && typeof item === "object" ? item : {}) as Record<string, unknown>;
      if (idempotencyKey === undefined) return { input, idempotencyKey: null };
      const key = idempotencyKeySchema.safeParse(idempotencyKey);
      if (key.success) return { input, idempotencyKey: key.data };
      const message = key.error.issues[0]?.message ?? "is invalid";
      return {
        input,
        idempotencyKey: null,
        invalid: new AppError("validation_failed", `idempotencyKey ${message}.`, { extra: { errors: [{ path: "idempotencyKey", message }] } }),
      };
    });
    // Every job of the batch keeps the request's trace when it has one (or tracing is on); else each starts its own.
    const trace = await traceCreate(request, "create jobs", { "http.route": "/api/v1/jobs/batch", "tick.tenant.id": principal.tenant.id, "tick.jobs.count": items.length });
    let created;
    try {
      created = await createJobs(getJobDeps(), principal, items, trace.stored);
    } catch (err) {
      endCreateSpan(trace.span, err);
      throw err;
    }
    const { outcomes, admission } = created;
    trace.span?.setAttributes({ "tick.jobs.created": outcomes.filter((o) => o.status === 201).length });
    endCreateSpan(trace.span, 200);
    return {
      status: 200,
      body: {
        results: outcomes.map((o, index) =>
          "error" in o
            ? { index, status: o.status, error: o.error }
            : { index, status: o.status, replayed: o.replayed, ...(o.debouncedInto ? { debouncedInto: o.debouncedInto } : {}), job: o.job },
        ),
      },
      headers: admission ? rateLimitHeaders(admission) : {},
    };
  },
  { rawBody: true, maxBodyBytes: (env) => env.API_MAX_BATCH_BODY_BYTES },
);
