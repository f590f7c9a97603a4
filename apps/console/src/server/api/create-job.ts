import { rateLimitHeaders } from "./admission";
import { getSingleCreates } from "./deps";
import type { ApiRequest, ApiResponse } from "./route";
import { endCreateSpan, traceCreate } from "../tracing";

/**
 * POST /api/v1/jobs: one job. Wrapped by apiRoute("createJob", ...) in its Next route and, for API keys,
 * in front of Next's router (server/direct-api.ts).
 */
export async function createJob({ principal, body, idempotencyKey, request }: ApiRequest<"createJob">): Promise<ApiResponse> {
  // The job keeps the request's trace (its traceparent header, or the "create job" span when tracing is on).
  const trace = await traceCreate(request, "create job", { "http.route": "/api/v1/jobs", "tick.tenant.id": principal.tenant.id });
  try {
    const { outcome, admission } = await getSingleCreates()(principal, { job: body, idempotencyKey }, trace.stored);
    const headers = admission ? rateLimitHeaders(admission) : {};
    if ("error" in outcome) throw Object.assign(outcome.cause as Error, { headers });
    trace.span?.setAttributes({ "tick.job.id": outcome.job.id, "tick.job.replayed": outcome.replayed });
    endCreateSpan(trace.span, outcome.status);
    return {
      status: outcome.status,
      body: outcome.debouncedInto ? { ...outcome.job, debouncedInto: outcome.debouncedInto } : outcome.job,
      headers: { ...headers, ...(outcome.replayed ? { "Idempotent-Replayed": "true" } : {}), Location: `/api/v1/jobs/${outcome.job.id}` },
    };
  } catch (err) {
    endCreateSpan(trace.span, err);
    throw err;
  }
}

