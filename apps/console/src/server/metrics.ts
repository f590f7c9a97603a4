import { Counter, Histogram, type Registry } from "prom-client";
import { AppError } from "@tick/core";
import { MetricLabels } from "@tick/runtime";

/** Why a job was refused at admission: the tenant's token bucket, or its pending-job quota (services/jobs.ts). */
type AdmissionRejection = "rate_limit" | "quota";

/** What became of the jobs of one create request (single or batch), as createJobs reports them. */
export interface AdmissionTally {
  /** Jobs created (201); idempotent replays (200) are not new jobs and are not counted. */
  admitted: number;
  rateLimited: number;
  overQuota: number;
  /** Creates a debounce folded into an existing job (200 with debouncedInto, not a replay). */
  debounced: number;
}

/** Counts an outcome list's created jobs and its refusals by admission (the codes services/jobs.ts throws). */
export function tallyAdmission(outcomes: readonly { status: number; cause?: unknown; debouncedInto?: string; replayed?: boolean }[]): AdmissionTally {
  const tally: AdmissionTally = { admitted: 0, rateLimited: 0, overQuota: 0, debounced: 0 };
  for (const o of outcomes) {
    if (o.status === 201) tally.admitted++;
    else if (o.status === 200 && o.debouncedInto && !o.replayed) tally.debounced++;
    else if (o.cause instanceof AppError && o.cause.code === "rate_limited") tally.rateLimited++;
    else if (o.cause instanceof AppError && o.cause.code === "quota_exceeded") tally.overQuota++;
  }
  return tally;
}

/** Bucket bounds of the API's request duration, from a cache hit (5 ms) to a large batch (10 s). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The console's metrics (docs/observability.md lists every one): per route of the API, and admission per
 * tenant (S16: one tenant bursting shows as its admitted and refused jobs). The route label is a name from
 * the contract's route table and the status an HTTP code, so both are small closed sets; tenants go through
 * the process's MetricLabels. Every update is an in-memory counter, so the request path pays nothing else.
 */
export function createConsoleMetrics(registry: Registry, labels: MetricLabels = new MetricLabels()) {
  const requests = new Counter({
    name: "tick_api_requests_total",
    help: "Requests of the /api/v1 API answered, by route name and HTTP status",
    labelNames: ["route", "status"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "tick_api_request_duration_seconds",
    help: "Time from an /api/v1 request's arrival to its response (a stream's start), by route name",
    labelNames: ["route"],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const admitted = labels.track(
    new Counter({ name: "tick_api_jobs_admitted_total", help: "Jobs created through the API (admitted by the rate limit and the pending-job quota), by tenant", labelNames: ["tenant"], registers: [registry] }),
    "tenant",
  );
  const rejected = labels.track(
    new Counter({
      name: "tick_api_jobs_rejected_total",
      help: "Jobs refused at admission with 429, by tenant and reason (rate_limit: the tenant's token bucket; quota: its pending-job limit)",
      labelNames: ["tenant", "reason"],
      registers: [registry],
    }),
    "tenant",
  );
  const debounced = new Counter({
    name: "tick_api_jobs_debounced_total",
    help: "Creates folded by their debounce into an existing job (answered with debouncedInto), across tenants",
    registers: [registry],
  });
  const failedOpen = new Counter({
    name: "tick_api_admission_fail_open_total",
    help: "Admission checks skipped because Redis did not answer in time (the request was let through without the rate limit)",
    registers: [registry],
  });

  return {
    registry,
    /** One answered API request (handleRequest). */
    request(route: string, status: number, seconds: number): void {
      requests.inc({ route, status: String(status) });
      duration.observe({ route }, seconds);
    },
    /** One create request's admission outcome for a tenant; its jobs count toward the tenant's rank. */
    admission(tenantId: string, tally: AdmissionTally): void {
      if (tally.debounced) debounced.inc(tally.debounced);
      const volume = tally.admitted + tally.rateLimited + tally.overQuota;
      if (!volume) return;
      const tenant = labels.tenant(tenantId, volume);
      if (tally.admitted) admitted.inc({ tenant }, tally.admitted);
      if (tally.rateLimited) rejected.inc({ tenant, reason: "rate_limit" satisfies AdmissionRejection }, tally.rateLimited);
      if (tally.overQuota) rejected.inc({ tenant, reason: "quota" satisfies AdmissionRejection }, tally.overQuota);
    },
    /** Redis did not answer the admission check: the request went through without the rate limit. */
    admissionFailedOpen(): void {
      failedOpen.inc();
    },
  };
}

export type ConsoleMetrics = ReturnType<typeof createConsoleMetrics>;
