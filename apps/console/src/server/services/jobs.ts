import { randomUUID } from "node:crypto";
import { AppError, childTraceContext, decideIdempotency, formatTraceparent, isTerminal, toProblem, type Cidr, type Problem, type TraceContext } from "@tick/core";
import { requestHash } from "@tick/core/node";
import { createJobSchema, type CancelOutcome, type CreateJob, type Job, type listJobsQuerySchema } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import type pg from "pg";
import type { z } from "zod";
import type { Admit, AdmissionResult } from "../api/admission";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { assertTargetAllowed } from "../api/target-guard";
import { fetchKeysetPage } from "../api/keyset-cursor";
import { mapDatabaseLoss } from "../problem";
import { jobView } from "./views";
import type { TenantServiceDeps } from "./tenant-service-deps";

export interface JobServiceDeps {
  pool: pg.Pool;
  admit: Admit;
  allowedCidrs: readonly Cidr[];
  idempotencyTtlMs: number;
  /** After commit: tell the scheduler's due index (best effort; its reconciliation covers a miss). */
  noteDue: (shard: number, tenantId: string, dueAtMs: number) => Promise<void>;
  /** Each request's outcomes, for the admission metrics (in-memory counters: the answer does not wait). */
  onOutcomes?: (tenantId: string, outcomes: readonly CreateOutcome[]) => void;
}

/** A job to create: validated by its route (a single create), or unvalidated input (a batch item, validated here one by one). */
export type CreateItem = ({ job: CreateJob } | { input: unknown }) & {
  idempotencyKey: string | null;
  /** A problem found before validation (e.g. a malformed idempotencyKey in a batch item). */
  invalid?: AppError;
};

export type CreateOutcome =
  /** `debouncedInto`: a debounced create folded into this existing job (200). */
  | { status: 201 | 200; job: Job; replayed: boolean; debouncedInto?: string }
  /** `cause` is what was thrown (an AppError or a ZodError), for single-item routes to rethrow. */
  | { status: number; error: Problem; cause: unknown };

interface Prepared {
  index: number;
  job: CreateJob;
  key: string | null;
  hash: string;
}

const failure = (err: unknown): CreateOutcome => {
  const problem = toProblem(err);
  return { status: problem.status, error: problem, cause: err };
};

/**
 * Creates jobs (one, or a batch of up to 1,000) for one tenant. Per item: validation, SSRF check,
 * admission (token bucket), idempotency (same key + same body → the original job; same key + other
 * body → 422), the pending-job quota, and the insert, all in one transaction. A 201 means committed.
 * The created jobs keep `trace` (the request's trace context), or a new trace each when it is null.
 */
export async function createJobs(
  deps: JobServiceDeps,
  principal: ApiPrincipal,
  items: CreateItem[],
  trace: TraceContext | null = null,
): Promise<{ outcomes: CreateOutcome[]; admission: AdmissionResult | null }> {
  const tenant = principal.tenant;
  const outcomes = new Array<CreateOutcome | undefined>(items.length);

  // 1. Validate each item and check its URLs (no I/O against the database yet).
  const prepared: Prepared[] = [];
  await Promise.all(
    items.map(async (item, index) => {
      if (item.invalid) {
        outcomes[index] = failure(item.invalid);
        return;
      }
      const parsed = "job" in item ? { success: true as const, data: item.job } : createJobSchema.safeParse(item.input);
      if (!parsed.success) {
        outcomes[index] = failure(parsed.error);
        return;
      }
      try {
        await assertTargetAllowed(parsed.data.target.url, "target.url", deps.allowedCidrs);
        if (parsed.data.callbackUrl) await assertTargetAllowed(parsed.data.callbackUrl, "callbackUrl", deps.allowedCidrs);
      } catch (err) {
        outcomes[index] = failure(err);
        return;
      }
      prepared.push({ index, job: parsed.data, key: item.idempotencyKey, hash: requestHash(parsed.data) });
    }),
  );
  prepared.sort((a, b) => a.index - b.index);

  // 2. Admission: one token per valid item; what the bucket cannot cover is refused with 429.
  let admission: AdmissionResult | null = null;
  let admitted = prepared;
  if (prepared.length) {
    admission = await deps.admit(tenant, prepared.length);
    admitted = prepared.slice(0, admission.granted);
    for (const p of prepared.slice(admission.granted)) {
      outcomes[p.index] = failure(
        new AppError("rate_limited", `Tenant creation rate exceeded (${tenant.admissionRate}/s, burst ${tenant.admissionBurst}).`, {
          retryAfterSeconds: Math.max(1, Math.ceil(admission.retryAfterMs / 1000)),
        }),
      );
    }
  }

  // 3. One transaction: idempotency, quota, insert.
  if (admitted.length) {
    try {
      await inTransaction(deps.pool, (client) => resolveInTransaction(client, deps, principal, admitted, outcomes, trace));
    } catch (err) {
      // Before COMMIT was sent nothing exists; if the connection broke during COMMIT we cannot know.
      throw mapDatabaseLoss(err, "Retry with the same Idempotency-Key to find out: a job that exists is answered as a replay.");
    }
  }
  const created = outcomes.flatMap((o) => (o && "job" in o && o.status === 201 ? [Date.parse(o.job.dueAt)] : []));
  // Not awaited: the answer must not wait for Redis (a slow or absent index only delays dispatch).
  if (created.length) void deps.noteDue(tenant.shard, tenant.id, Math.min(...created)).catch(() => {});
  const settled = outcomes.map((o) => o!);
  deps.onOutcomes?.(tenant.id, settled);
  return { outcomes: settled, admission };
}

async function resolveInTransaction(
  client: pg.PoolClient,
  deps: JobServiceDeps,
  principal: ApiPrincipal,
  items: Prepared[],
  outcomes: (CreateOutcome | undefined)[],
  trace: TraceContext | null,
): Promise<void> {
  const tenant = principal.tenant;
  const keys = [...new Set(items.flatMap((p) => (p.key ? [p.key] : [])))];
  const queueNames = [...new Set(items.map((p) => p.job.queue))];
  const queues = await sql.findQueuesByName(client, tenant.id, queueNames);
  const queueByName = new Map(queues.map((q) => [q.name, q]));
  const queueName = (queueId: string) => queues.find((q) => q.id === queueId)?.name ?? "";
  const byKey = (rows: (sql.JobRow & { key_expired: boolean; debounced: boolean })[]) => new Map(rows.map((r) => [r.idempotency_key!, r]));

  /** Settles a replay or a conflict against the key's stored job; false when the item is to be created. */
  const releasable: string[] = [];
  /** Items whose Idempotency-Key a concurrent request took first: answered from the key's job below. */
  const lostKeys: Prepared[] = [];
  const settled = (stored: ReturnType<typeof byKey>, p: Prepared): boolean => {
    const row = p.key ? stored.get(p.key) : undefined;
    const decision = decideIdempotency(row && { requestHash: row.request_hash, expired: row.key_expired }, p.hash);
    if (decision === "replay") {
      outcomes[p.index] = { status: 200, job: jobView(row!, queueName(row!.queue_id)), replayed: true, ...(row!.debounced ? { debouncedInto: row!.id } : {}) };
    }
    else if (decision === "conflict") outcomes[p.index] = failure(new AppError("idempotency_key_reused", `Idempotency-Key "${p.key}" was already used with a different request body.`));
    else if (decision === "expired") releasable.push(p.key!);
    return decision === "replay" || decision === "conflict";
  };

  // Replays first: they neither count against the quota nor insert anything.
  const stored = byKey(await sql.findJobsByIdempotencyKeys(client, tenant.id, keys));
  let fresh = items.filter((p) => !settled(stored, p));
  // Keys past their window are released so this request can take them (the insert's ON CONFLICT decides).
  if (releasable.length) await sql.releaseExpiredIdempotencyKeys(client, tenant.id, [...new Set(releasable)]);
  fresh = fresh.filter((p) => {
    if (queueByName.has(p.job.queue)) return true;
    outcomes[p.index] = failure(
      new AppError("validation_failed", `Queue "${p.job.queue}" does not exist.`, { extra: { errors: [{ path: "queue", message: "no such queue" }] } }),
    );
    return false;
  });
  if (!fresh.length) return;

  // Pending-job quota, counted in Postgres so it holds even when Redis is down.
  const pending = await sql.countPendingJobs(client, tenant.id, tenant.maxPendingJobs + 1);
  let room = Math.max(0, tenant.maxPendingJobs - pending);
  const overQuota = () =>
    failure(new AppError("quota_exceeded", `The tenant already has ${pending} unfinished jobs (limit ${tenant.maxPendingJobs}).`, { retryAfterSeconds: 30 }));
  // The request's trace, or a new one per job: made here from a pooled random buffer, cheaper than the
  // column's default (two gen_random_uuid() a row), which serves the other inserts (schedule occurrences).
  const traceparent = trace ? formatTraceparent(trace) : null;
  const tracestate = trace?.traceState ?? null;
  const traceOf = () => ({ traceparent: traceparent ?? formatTraceparent(childTraceContext(null)), tracestate });

  // Debounced creates by window (queue and debounce key), in request order: the first of a window's items
  // decides (fold, answer or create) and the rest of them fold into that job in one step.
  const windows = new Map<string, Prepared[]>();
  for (const p of fresh.filter((x) => x.job.debounce)) {
    const id = `${queueByName.get(p.job.queue)!.id}/${p.job.debounce!.key}`;
    windows.set(id, [...(windows.get(id) ?? []), p]);
  }
  for (const items of windows.values()) {
    const [first, ...rest] = items as [Prepared, ...Prepared[]];
    const queue = queueByName.get(first.job.queue)!;
    const outcome = await createDebounced(client, deps, tenant, first, queue, traceOf(), room > 0);
    if (outcome === "lost") {
      lostKeys.push(...items);
      continue;
    }
    outcomes[first.index] = outcome ?? overQuota();
    if (!outcome || !("job" in outcome)) {
      for (const p of rest) outcomes[p.index] = overQuota();
      continue;
    }
    if (outcome.status === 201) room--;
    if (rest.length) for (const [p, o] of await foldDebouncedRest(client, deps, tenant, queue, outcome.job.id, rest)) outcomes[p.index] = o;
  }
  fresh = fresh.filter((x) => !x.job.debounce);

  for (const p of fresh.slice(room)) outcomes[p.index] = overQuota();
  fresh = fresh.slice(0, room);
  if (!fresh.length && !lostKeys.length) return;

  const ids = new Map<Prepared, string>(fresh.map((p) => [p, randomUUID()]));
  const newJobs = fresh.map((p) => {
    const q = queueByName.get(p.job.queue)!;
    const j = p.job;
    return {
      id: ids.get(p)!,
      queue_id: q.id,
      run_at: j.runAt ?? null,
      delay_ms: j.delayMs ?? 0,
      expires_at: j.expiresAt ?? null,
      idempotency_key: p.key,
      request_hash: p.key ? p.hash : null,
      // What the job does: the rule a schedule's occurrences follow too (@tick/db's job-template.ts).
      ...sql.jobColumnsFromTemplate(j, q),
      ...traceOf(),
    };
  });
  const inserted = newJobs.length ? await sql.insertJobs(client, tenant, newJobs, deps.idempotencyTtlMs) : [];
  const insertedById = new Map(inserted.map((r) => [r.id, r]));
  const lost: Prepared[] = [...lostKeys];
  for (const p of fresh) {
    const row = insertedById.get(ids.get(p)!);
    if (row) outcomes[p.index] = { status: 201, job: jobView(row, p.job.queue), replayed: false };
    else lost.push(p); // a concurrent request (or an earlier item of this batch) took the key first
  }
  if (lost.length) {
    const winners = byKey(await sql.findJobsByIdempotencyKeys(client, tenant.id, lost.map((p) => p.key!)));
    for (const p of lost) {
      if (!settled(winners, p)) {
        outcomes[p.index] = failure(new AppError("conflict", "The job could not be created; retry the request."));
      }
    }
  }
}

/**
 * One debounced create (docs/api.md "Debounce"), under its window's lock: a trailing create folds into the
 * window's job while it is scheduled and before the window's maxWait (the job takes this create's target and
 * is due periodMs from now); a leading create inside its open window is answered with the window's job; any
 * other opens a new window on a new job (trailing: due periodMs from now; leading: due now). Null: a new job
 * was needed and the quota has no room; "lost": its Idempotency-Key was taken by a concurrent request.
 */
async function createDebounced(
  client: pg.PoolClient,
  deps: JobServiceDeps,
  tenant: ApiPrincipal["tenant"],
  p: Prepared,
  queue: sql.QueueDefaultsRow,
  trace: { traceparent: string; tracestate: string | null },
  roomLeft: boolean,
): Promise<CreateOutcome | null | "lost"> {
  const d = p.job.debounce!;
  const columns = sql.jobColumnsFromTemplate(p.job, queue);
  const window = await sql.lockDebounceWindow(client, queue.id, d.key);
  const folded = async (row: sql.JobRow): Promise<CreateOutcome> => {
    if (p.key) await sql.holdDebouncedIdempotencyKeys(client, { tenantId: tenant.id, jobId: row.id, keys: [{ key: p.key, requestHash: p.hash }], ttlMs: deps.idempotencyTtlMs });
    return { status: 200, job: jobView(row, queue.name), replayed: false, debouncedInto: row.id };
  };
  if (window && window.mode === d.mode) {
    if (d.mode === "trailing" && window.job_scheduled && window.before_max) {
      const row = await sql.foldIntoDebouncedJob(client, { tenantId: tenant.id, queueId: queue.id, key: d.key, jobId: window.job_id, columns, periodMs: d.periodMs });
      if (row) return folded(row);
    }
    if (d.mode === "leading" && window.open) {
      const row = await sql.findJob(client, tenant.id, window.job_id);
      if (row) {
        await sql.countDebouncedCreate(client, queue.id, d.key, 1);
        return folded(row);
      }
    }
  }
  if (!roomLeft) return null;
  const [row] = await sql.insertJobs(
    client,
    tenant,
    [
      {
        id: randomUUID(),
        queue_id: queue.id,
        run_at: null,
        delay_ms: d.mode === "trailing" ? d.periodMs : 0,
        expires_at: p.job.expiresAt ?? null,
        idempotency_key: p.key,
        request_hash: p.key ? p.hash : null,
        ...columns,
        ...trace,
        debounce_key: d.key,
      },
    ],
    deps.idempotencyTtlMs,
  );
  if (!row) return "lost";
  await sql.openDebounceWindow(client, {
    tenantId: tenant.id,
    queueId: queue.id,
    key: d.key,
    jobId: row.id,
    mode: d.mode,
    periodMs: d.periodMs,
    maxWaitMs: d.maxWaitMs ?? null,
  });
  return { status: 201, job: jobView(row, queue.name), replayed: false };
}

/**
 * The rest of a batch's items of one debounce window, after its first item made or found `jobId` (locked by
 * this transaction): trailing items fold into it at once with the last item's target (the state a fold per
 * item would leave), leading items are answered with it. Each is answered 200 with `debouncedInto`, and its
 * Idempotency-Key, if any, is held on the job.
 */
async function foldDebouncedRest(
  client: pg.PoolClient,
  deps: JobServiceDeps,
  tenant: ApiPrincipal["tenant"],
  queue: sql.QueueDefaultsRow,
  jobId: string,
  rest: Prepared[],
): Promise<[Prepared, CreateOutcome][]> {
  const last = rest[rest.length - 1]!;
  const d = last.job.debounce!;
  const row =
    d.mode === "trailing"
      ? await sql.foldIntoDebouncedJob(client, { tenantId: tenant.id, queueId: queue.id, key: d.key, jobId, columns: sql.jobColumnsFromTemplate(last.job, queue), periodMs: d.periodMs, creates: rest.length })
      : await sql.findJob(client, tenant.id, jobId);
  if (!row) return rest.map((p) => [p, failure(new AppError("conflict", "The debounced job changed concurrently; retry the request."))]);
  if (d.mode === "leading") await sql.countDebouncedCreate(client, queue.id, d.key, rest.length);
  const keyed = rest.filter((p) => p.key);
  if (keyed.length) {
    await sql.holdDebouncedIdempotencyKeys(client, { tenantId: tenant.id, jobId: row.id, keys: keyed.map((p) => ({ key: p.key!, requestHash: p.hash })), ttlMs: deps.idempotencyTtlMs });
  }
  const job = jobView(row, queue.name);
  return rest.map((p) => [p, { status: 200, job, replayed: false, debouncedInto: row.id }]);
}

/** A page of the tenant's jobs, newest first, with the listing's filters (GET /jobs). */
export async function listJobs({ pool }: Pick<TenantServiceDeps, "pool">, tenantId: string, query: z.output<typeof listJobsQuerySchema>) {
  const { page, nextCursor } = await fetchKeysetPage(
    query,
    (window) =>
      sql.listJobs(pool, tenantId, {
        statuses: query.status,
        queue: query.queue,
        scheduleId: query.scheduleId,
        idempotencyKey: query.idempotencyKey,
        dependency: query.dependency,
        createdAfter: query.createdAfter,
        createdBefore: query.createdBefore,
        ...window,
      }),
    (r) => r.created_at,
  );
  return { data: page.map((r) => jobView(r)), nextCursor };
}

export async function getJobWithAttempts({ pool }: Pick<TenantServiceDeps, "pool">, tenantId: string, jobId: string) {
  const row = await sql.findJob(pool, tenantId, jobId);
  if (!row) throw new AppError("not_found", "No such job.");
  const attempts = await sql.listAttempts(pool, tenantId, jobId);
  return { row, attempts };
}

export interface CancelResult {
  status: 200 | 202;
  outcome: CancelOutcome;
  /** Attempts that had started before the cancel: each may have reached the target and had its effect. */
  attemptsStarted: number;
  /** The job was already cancelled (or its cancel already recorded) by an earlier request. */
  repeated: boolean;
  row: sql.JobRow;
}

const cancelled = (row: sql.JobRow, repeated: boolean): CancelResult => ({
  status: 200,
  outcome: row.attempt_count > 0 ? "cancelled_after_attempts" : "cancelled",
  attemptsStarted: row.attempt_count,
  repeated,
  row,
});

/**
 * Cancel tells the truth (docs/api.md, "Cancelling"):
 * - 200 cancelled: no attempt ever started and none will;
 * - 200 cancelled_after_attempts: none will start from now on, but earlier attempts started (a target that
 *   answered 500 or timed out may have acted), waiting for a retry or dispatched for one;
 * - 202 running: an attempt is executing; it may still complete; no retry will follow;
 * - a repeat (already cancelled, or cancel already recorded on the running attempt) answers as the first did,
 *   so a client that lost the answer (outcome_unknown) can simply ask again;
 * - 409 when the job had finished otherwise.
 * The change, its job.cancelled webhook and its audit row commit together.
 */
export async function cancelJob({ pool }: Pick<TenantServiceDeps, "pool">, principal: ApiPrincipal, jobId: string): Promise<CancelResult> {
  const tenantId = principal.tenant.id;
  const audit = (client: pg.PoolClient, action: string, row: sql.JobRow) =>
    sql.insertAudit(client, { ...auditActor(principal), action, targetType: "job", targetId: row.id, details: { attemptsStarted: row.attempt_count } });
  return inTransaction(pool, async (client) => {
    // Each statement sees the job as it is now: a job that moved between them (dispatched → running, or
    // running → scheduled for a retry) is looked at again, a few times at most.
    for (let round = 0; round < 3; round += 1) {
      const before = await sql.cancelJobBeforeStart(client, tenantId, jobId);
      if (before) {
        await audit(client, "job.cancelled", before);
        return cancelled(before, false);
      }
      const running = await sql.requestCancelOfRunningJob(client, tenantId, jobId);
      if (running) {
        if (running.first_request) await audit(client, "job.cancel_requested", running);
        return { status: 202, outcome: "running", attemptsStarted: running.attempt_count, repeated: !running.first_request, row: running };
      }
      const current = await sql.findJob(client, tenantId, jobId);
      if (!current) throw new AppError("not_found", "No such job.");
      if (current.status === "cancelled") return cancelled(current, true);
      if (isTerminal(current.status)) {
        throw new AppError("conflict", `The job has already finished (${current.status}).`, { extra: { jobStatus: current.status } });
      }
    }
    throw new AppError("conflict", "The job kept changing state; retry the cancel.");
  });
}
