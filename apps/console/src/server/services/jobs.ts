import { randomUUID } from "node:crypto";
import { AppError, childTraceContext, decideIdempotency, formatTraceparent, isTerminal, toProblem, type Cidr, type Problem, type TraceContext } from "@tick/core";
import { requestHash } from "@tick/core/node";
import { createJobSchema, type CancelOutcome, type CreateJob, type Job, type listJobsQuerySchema } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import { createBatchQueue, type BatchQueue } from "@tick/runtime";
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
  /** Starts a fold of the tenant's live-job count rows on another connection, without waiting (sql.compactLiveJobCounts). */
  foldLiveJobCounts?: (shard: number, tenantId: string) => void;
  /** Each request's outcomes, for the admission metrics (in-memory counters: the answer does not wait). */
  onOutcomes?: (tenantId: string, outcomes: readonly CreateOutcome[]) => void;
}

/** A tenant's live-job count summed from more rows than this is folded by the console (the scheduler folds every second). */
const LIVE_COUNT_ROWS_TO_FOLD = 500;

/** A job to create: validated by its route (a single create), or unvalidated input (a batch item, validated here one by one). */
export type CreateItem = ({ job: CreateJob } | { input: unknown }) & {
  idempotencyKey: string | null;
  /** A problem found before validation (e.g. a malformed idempotencyKey in a batch item). */
  invalid?: AppError;
  /** This item's own request trace (single creates grouped into one transaction); otherwise the call's. */
  trace?: TraceContext | null;
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
  trace: TraceContext | null | undefined;
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

  // 1. Validate each item and check its URLs (no I/O against the database yet). A URL is checked once per call
  // (its host resolved once): the items of a batch mostly share their targets.
  const prepared: Prepared[] = [];
  const targetChecks = new Map<string, Promise<void>>();
  const checkTarget = (url: string, field: string) => {
    const key = `${field} ${url}`;
    let check = targetChecks.get(key);
    if (!check) targetChecks.set(key, (check = assertTargetAllowed(url, field, deps.allowedCidrs)));
    return check;
  };
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
        await checkTarget(parsed.data.target.url, "target.url");
        if (parsed.data.callbackUrl) await checkTarget(parsed.data.callbackUrl, "callbackUrl");
      } catch (err) {
        outcomes[index] = failure(err);
        return;
      }
      prepared.push({ index, job: parsed.data, key: item.idempotencyKey, hash: requestHash(parsed.data), trace: item.trace });
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

interface SingleCreateResult {
  outcome: CreateOutcome;
  admission: AdmissionResult | null;
}

/** Creates one job (POST /jobs); concurrent calls for one tenant share a transaction (createSingleCreates). */
export type CreateSingle = (principal: ApiPrincipal, item: CreateItem, trace: TraceContext | null) => Promise<SingleCreateResult>;

interface SingleCreate {
  principal: ApiPrincipal;
  item: CreateItem;
}

/** The most single creates that share one transaction. */
const SINGLE_CREATES_PER_TRANSACTION = 250;

/**
 * Single creates as a group commit, per tenant: a create goes out at once when none of its tenant's is in
 * flight, and the creates that arrive meanwhile go out together, as one createJobs call (one admission
 * check, one transaction: idempotency, quota, insert) when it returns. Each request keeps its own outcome,
 * Idempotency-Key and trace; a request's answer still means committed. A group that fails with an error
 * Postgres reported (so it rolled back) is retried one create at a time, so one create's fault is its own;
 * a lost database (unreachable, or cut while committing) answers the whole group with that error.
 */
export function createSingleCreates(deps: JobServiceDeps, maxBatch = SINGLE_CREATES_PER_TRANSACTION): CreateSingle {
  const queues = new Map<string, BatchQueue<SingleCreate, SingleCreateResult>>();
  const run = async (items: SingleCreate[]): Promise<SingleCreateResult[]> => {
    // The latest principal's tenant limits (each request read them fresh; they differ only across a change).
    const { outcomes, admission } = await createJobs(deps, items[items.length - 1]!.principal, items.map((i) => i.item));
    return outcomes.map((outcome) => ({ outcome, admission }));
  };
  const queueOf = (tenantId: string) => {
    let queue = queues.get(tenantId);
    if (!queue) {
      queue = createBatchQueue<SingleCreate, SingleCreateResult>({
        maxBatch,
        runBatch: run,
        runOne: async (item) => (await run([item]))[0]!,
        retryOneByOne: (err) => !(err instanceof AppError && (err.code === "outcome_unknown" || err.code === "database_unavailable")),
      });
      queues.set(tenantId, queue);
    }
    return queue;
  };
  return (principal, item, trace) => queueOf(principal.tenant.id).submit({ principal, item: { ...item, trace } });
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

  /** Keys `settled` found past their window. */
  const releasable: string[] = [];
  /** Items whose Idempotency-Key a concurrent request took first: answered from the key's job below. */
  const lostKeys: Prepared[] = [];
  /** Releases the keys `settled` found past their window (so this request can take them) and returns them. */
  const releaseExpired = async (): Promise<Set<string>> => {
    const released = new Set(releasable.splice(0));
    if (released.size) await sql.releaseExpiredIdempotencyKeys(client, tenant.id, [...released]);
    return released;
  };
  /** Settles a replay or a conflict against the key's stored job; false when the item is to be created. */
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

  // Pending-job quota, counted in Postgres so it holds even when Redis is down.
  const { pending, rows: countRows } = await sql.countPendingJobs(client, tenant);
  // The scheduler folds the count's rows every second; a tenant creating faster than that, or while no scheduler
  // runs, gets its rows folded here too, so the count stays a short read.
  if (countRows > LIVE_COUNT_ROWS_TO_FOLD) deps.foldLiveJobCounts?.(tenant.shard, tenant.id);
  let room = Math.max(0, tenant.maxPendingJobs - pending);
  // Replays neither count against the quota nor insert anything, so they are settled first when the quota could
  // refuse some of the items, and for debounced items (their windows are decided before any insert). Otherwise
  // the insert goes first and decides (a key taken before makes its item's row a no-op), and only the items it
  // did not create are looked up: one statement less for the usual request, whose keys are new.
  const replaysFirst = items.length > room || items.some((p) => p.job.debounce);
  let fresh = items;
  if (replaysFirst) {
    const stored = byKey(await sql.findJobsByIdempotencyKeys(client, tenant.id, keys));
    fresh = items.filter((p) => !settled(stored, p));
    // The insert's ON CONFLICT decides who takes a released key.
    await releaseExpired();
  }
  fresh = fresh.filter((p) => {
    if (queueByName.has(p.job.queue)) return true;
    outcomes[p.index] = failure(
      new AppError("validation_failed", `Queue "${p.job.queue}" does not exist.`, { extra: { errors: [{ path: "queue", message: "no such queue" }] } }),
    );
    return false;
  });
  if (!fresh.length) return;
  const overQuota = () =>
    failure(new AppError("quota_exceeded", `The tenant already has ${pending} unfinished jobs (limit ${tenant.maxPendingJobs}).`, { retryAfterSeconds: 30 }));
  // The request's trace, or a new one per job: made here from a pooled random buffer, cheaper than the
  // column's default (two gen_random_uuid() a row), which serves only inserts that name no trace.
  const requestTrace = trace ? { traceparent: formatTraceparent(trace), tracestate: trace.traceState ?? null } : null;
  const traceOf = (p: Prepared) => {
    if (p.trace === undefined && requestTrace) return requestTrace;
    const own = p.trace ?? null;
    return { traceparent: formatTraceparent(own ?? childTraceContext(null)), tracestate: own?.traceState ?? null };
  };

  // Debounced creates by window (queue and debounce key), a whole batch's windows at once.
  const windows = new Map<string, Prepared[]>();
  for (const p of fresh.filter((x) => x.job.debounce)) {
    const id = `${queueByName.get(p.job.queue)!.id}/${p.job.debounce!.key}`;
    windows.set(id, [...(windows.get(id) ?? []), p]);
  }
  if (windows.size) {
    const made = await createDebounced(client, deps, tenant, [...windows.values()], queueByName, traceOf, room);
    room -= made.created;
    for (const [p, o] of made.outcomes) outcomes[p.index] = o ?? overQuota();
    lostKeys.push(...made.lost);
  }
  fresh = fresh.filter((x) => !x.job.debounce);

  for (const p of fresh.slice(room)) outcomes[p.index] = overQuota();
  fresh = fresh.slice(0, room);
  if (!fresh.length && !lostKeys.length) return;

  /** Inserts the items; those whose key was already taken come back (by a concurrent request, an earlier item of
   *  this batch, or any request before when the insert went first). */
  const insert = async (batch: Prepared[]): Promise<Prepared[]> => {
    if (!batch.length) return [];
    const ids = new Map<Prepared, string>(batch.map((p) => [p, randomUUID()]));
    const newJobs = batch.map((p) => {
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
        ...traceOf(p),
      };
    });
    const insertedById = new Map((await sql.insertJobs(client, tenant, newJobs, deps.idempotencyTtlMs)).map((r) => [r.id, r]));
    const taken: Prepared[] = [];
    for (const p of batch) {
      const row = insertedById.get(ids.get(p)!);
      if (row) outcomes[p.index] = { status: 201, job: jobView(row, p.job.queue), replayed: false };
      else taken.push(p);
    }
    return taken;
  };
  /** Answers the items whose key another job holds from that job (a replay or a refusal) and returns the others
   *  (their key's window had passed: `releasable`; or no job holds it any more). */
  const settleTaken = async (taken: Prepared[]): Promise<Prepared[]> => {
    if (!taken.length) return [];
    const holders = byKey(await sql.findJobsByIdempotencyKeys(client, tenant.id, taken.map((p) => p.key!)));
    return taken.filter((p) => !settled(holders, p));
  };
  let unsettled = await settleTaken([...lostKeys, ...(await insert(fresh))]);
  if (!replaysFirst && releasable.length) {
    // The insert went first and met keys past their window: released, their items are inserted once more.
    const released = await releaseExpired();
    const again = unsettled.filter((p) => released.has(p.key!));
    unsettled = [...unsettled.filter((p) => !released.has(p.key!)), ...(await settleTaken(await insert(again)))];
  }
  for (const p of unsettled) outcomes[p.index] = failure(new AppError("conflict", "The job could not be created; retry the request."));
}

/**
 * Debounced creates (docs/api.md "Debounce"), a batch's windows at once under their locks. Per window (its items
 * in request order; the first's mode and period rule it): a trailing window whose job is still scheduled and
 * before its maxWait takes every item, the job taking the last item's target and due periodMs from now; an open
 * leading window answers every item with its job; any other window is opened on a new job (trailing: made from
 * the last item's template, due periodMs from now; leading: from the first's, due now), which answers the first
 * item 201 and the rest 200. Folded and answered items carry `debouncedInto`, and their Idempotency-Keys are held on the job. An
 * outcome of null: a new job was needed and the quota had no room; `lost`: the items whose first item's
 * Idempotency-Key a concurrent request took (answered from that key's job by the caller).
 */
async function createDebounced(
  client: pg.PoolClient,
  deps: JobServiceDeps,
  tenant: ApiPrincipal["tenant"],
  windows: Prepared[][],
  queueByName: ReadonlyMap<string, sql.QueueDefaultsRow>,
  traceOf: (p: Prepared) => { traceparent: string; tracestate: string | null },
  room: number,
): Promise<{ outcomes: [Prepared, CreateOutcome | null][]; lost: Prepared[]; created: number }> {
  const groups = windows.map((items) => {
    const first = items[0]!;
    const last = items[items.length - 1]!;
    const queue = queueByName.get(first.job.queue)!;
    // A trailing window's job carries its latest create; a leading one's, its first.
    const source = first.job.debounce!.mode === "trailing" ? last : first;
    return { items, first, last, source, queue, d: first.job.debounce!, columns: sql.jobColumnsFromTemplate(source.job, queue) };
  });
  type Group = (typeof groups)[number];
  const found = await sql.lockDebounceWindows(client, groups.map((g) => ({ queueId: g.queue.id, key: g.d.key })));
  const windowOf = (g: Group) => found.get(`${g.queue.id}/${g.d.key}`);
  const foldable = groups.filter((g) => {
    const w = windowOf(g);
    return g.d.mode === "trailing" && w?.mode === "trailing" && w.job_scheduled && w.before_max;
  });
  const answerable = groups.filter((g) => {
    const w = windowOf(g);
    return g.d.mode === "leading" && w?.mode === "leading" && w.open;
  });
  const outcomes: [Prepared, CreateOutcome | null][] = [];
  const held: { key: string; requestHash: string; jobId: string }[] = [];
  const answer = (items: Prepared[], row: sql.JobRow, queueName: string) => {
    const job = jobView(row, queueName);
    for (const p of items) {
      outcomes.push([p, { status: 200, job, replayed: false, debouncedInto: row.id }]);
      if (p.key) held.push({ key: p.key, requestHash: p.hash, jobId: row.id });
    }
  };

  const folded = new Map(
    (
      await sql.foldIntoDebouncedJobs(
        client,
        tenant.id,
        foldable.map((g) => ({ queueId: g.queue.id, key: g.d.key, jobId: windowOf(g)!.job_id, columns: g.columns, periodMs: g.last.job.debounce!.periodMs, creates: g.items.length })),
      )
    ).map((r) => [r.id, r]),
  );
  const answered = new Map((await sql.findJobsByIds(client, tenant.id, answerable.map((g) => windowOf(g)!.job_id))).map((r) => [r.id, r]));
  const fresh: Group[] = [];
  for (const g of groups) {
    const row = folded.get(windowOf(g)?.job_id ?? "") ?? (answerable.includes(g) ? answered.get(windowOf(g)!.job_id) : undefined);
    if (row && (foldable.includes(g) || answerable.includes(g))) answer(g.items, row, g.queue.name);
    else fresh.push(g);
  }
  await sql.countDebouncedCreates(client, answerable.filter((g) => answered.has(windowOf(g)!.job_id)).map((g) => ({ queueId: g.queue.id, key: g.d.key, creates: g.items.length })));

  // New windows, as far as the quota allows: one job each, made from the window's last item.
  const making = fresh.slice(0, Math.max(0, room));
  for (const g of fresh.slice(making.length)) for (const p of g.items) outcomes.push([p, null]);
  const ids = new Map(making.map((g) => [g, randomUUID()]));
  const inserted = new Map(
    (
      await sql.insertJobs(
        client,
        tenant,
        making.map((g) => ({
          id: ids.get(g)!,
          queue_id: g.queue.id,
          run_at: null,
          delay_ms: g.d.mode === "trailing" ? g.last.job.debounce!.periodMs : 0,
          expires_at: g.source.job.expiresAt ?? null,
          idempotency_key: g.first.key,
          request_hash: g.first.key ? g.first.hash : null,
          ...g.columns,
          ...traceOf(g.source),
          debounce_key: g.d.key,
        })),
        deps.idempotencyTtlMs,
      )
    ).map((r) => [r.id, r]),
  );
  const lost: Prepared[] = [];
  const opened: sql.DebounceOpen[] = [];
  for (const g of making) {
    const row = inserted.get(ids.get(g)!);
    if (!row) {
      lost.push(...g.items);
      continue;
    }
    outcomes.push([g.first, { status: 201, job: jobView(row, g.queue.name), replayed: false }]);
    if (g.items.length > 1) answer(g.items.slice(1), row, g.queue.name);
    opened.push({ queueId: g.queue.id, key: g.d.key, jobId: row.id, mode: g.d.mode, periodMs: g.d.periodMs, maxWaitMs: g.d.maxWaitMs ?? null, creates: g.items.length });
  }
  await sql.openDebounceWindows(client, tenant.id, opened);
  await sql.holdDebouncedIdempotencyKeys(client, { tenantId: tenant.id, keys: held, ttlMs: deps.idempotencyTtlMs });
  return { outcomes, lost, created: opened.length };
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
        flowKey: query.flowKey,
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
