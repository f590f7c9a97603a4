import type { ApiKey, ConsoleRole, Job, Queue, Replay } from "@tick/contract";
import type { sql } from "@tick/db";

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** A job row as the API shows it. */
export function jobView(row: sql.JobRow, queueName = row.queue_name ?? ""): Job {
  return {
    id: row.id,
    queue: queueName,
    status: row.status,
    version: row.version,
    dueAt: row.due_at.toISOString(),
    expiresAt: iso(row.expires_at),
    priority: row.priority,
    idempotencyKey: row.idempotency_key,
    target: { method: row.method, url: row.url, headers: row.headers, body: row.body, timeoutMs: row.timeout_ms },
    attemptCount: row.attempt_count,
    maxAttempts: row.max_attempts,
    backoff: row.backoff,
    callbackUrl: row.callback_url,
    dependencyKey: row.dependency_key,
    flowKey: row.flow_key,
    debounceKey: row.debounce_key,
    metadata: row.metadata,
    lastError: row.last_error ?? null,
    result: row.result ?? null,
    scheduleId: row.schedule_id,
    occurrenceAt: iso(row.occurrence_at),
    replayId: row.replay_id,
    cancelRequestedAt: iso(row.cancel_requested_at),
    trace: row.traceparent ? { traceId: row.traceparent.slice(3, 35), traceparent: row.traceparent, tracestate: row.tracestate } : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    finishedAt: iso(row.finished_at),
  };
}

export function attemptView(row: sql.AttemptRow) {
  return {
    id: row.id,
    number: row.number,
    status: row.status as "pending",
    fencingToken: String(row.fencing_token),
    workerId: row.worker_id,
    dispatchedAt: row.dispatched_at.toISOString(),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    leaseExpiresAt: iso(row.lease_expires_at),
    outcome: row.outcome,
    httpStatus: row.http_status,
    error: row.error ?? null,
    durationMs: row.duration_ms,
  };
}

interface QueueRecord {
  name: string;
  paused: boolean;
  concurrency: number | null;
  ratePerSecond: number | null;
  defaultMaxAttempts: number;
  defaultBackoff: unknown;
  defaultTimeoutMs: number;
  perKeyConcurrency: number | null;
  perKeyRateLimit: number | null;
  perKeyRatePeriodMs: number | null;
  perKeyRateMode: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export function queueView(q: QueueRecord): Queue {
  return {
    name: q.name,
    paused: q.paused,
    concurrency: q.concurrency,
    ratePerSecond: q.ratePerSecond,
    defaultMaxAttempts: q.defaultMaxAttempts,
    defaultBackoff: q.defaultBackoff as Queue["defaultBackoff"],
    defaultTimeoutMs: q.defaultTimeoutMs,
    perKeyConcurrency: q.perKeyConcurrency,
    perKeyRate: q.perKeyRateLimit !== null && q.perKeyRatePeriodMs !== null ? { limit: q.perKeyRateLimit, periodMs: q.perKeyRatePeriodMs } : null,
    perKeyRateMode: q.perKeyRateMode === "drop" ? "drop" : "delay",
    version: q.version,
    createdAt: q.createdAt.toISOString(),
    updatedAt: q.updatedAt.toISOString(),
  };
}

interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  role: ConsoleRole;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export function apiKeyView(k: ApiKeyRecord): ApiKey {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    role: k.role,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: iso(k.lastUsedAt),
    expiresAt: iso(k.expiresAt),
    revokedAt: iso(k.revokedAt),
  };
}

function flatFilter(recorded: unknown): Record<string, unknown> {
  const { filter, jobIds } = (recorded ?? {}) as { filter?: Record<string, unknown>; jobIds?: string[] };
  return { ...(filter ?? {}), ...(jobIds ? { jobIds } : {}) };
}

/** A DLQ replay as the API shows it, with its progress. */
export function replayView(r: sql.ReplayWithProgress, actorName: string): Replay {
  return {
    id: r.id,
    status: r.status,
    statusReason: r.status_reason,
    actor: r.actor,
    actorName,
    // Stored as the request's selection ({ filter?, jobIds? }); shown flat: the match fields, and jobIds when given.
    filter: flatFilter(r.filter),
    ratePerSecond: r.rate_per_second,
    failureThreshold: r.failure_threshold,
    failureWindow: r.failure_window,
    attempts: r.attempts,
    progress: { total: r.total, released: r.released, succeeded: r.succeeded, failed: r.failed, skipped: r.skipped, inFlight: r.in_flight, remaining: r.remaining },
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    finishedAt: iso(r.finished_at),
  };
}
