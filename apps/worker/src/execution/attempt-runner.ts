import type pg from "pg";
import type { BreakerKey, Breakers } from "@tick/breaker";
import {
  attemptMessageSchema,
  attemptsOfMessage,
  classifyHttpOutcome,
  decideAttemptOutcome,
  formatTraceparent,
  parseTraceparent,
  storedTraceContext,
  type AttemptMessage,
  type TraceContext,
} from "@tick/core";
import { sql } from "@tick/db";
import type { FaultPoints, Logger, TickSpan, Tracing } from "@tick/runtime";
import type { WorkerMetrics } from "../metrics.js";
import type { AttemptCompleter } from "./attempt-completer.js";
import type { LeaseKeeper } from "./attempt-lease.js";
import type { AttemptStarter } from "./attempt-starter.js";
import type { CallSlots } from "./call-slots.js";
import type { HttpCaller, HttpCallResult } from "./http-call.js";
import { signTargetRequest } from "./webhook-signing.js";

export interface AttemptRunnerConfig {
  workerId: string;
  leaseMs: number;
  heartbeatMs: number;
}

export interface AttemptRunnerDeps {
  pool: pg.Pool;
  http: HttpCaller;
  logger: Logger;
  metrics: WorkerMetrics;
  faults: FaultPoints;
  breakers: Breakers;
  /** Batches starts, completions and lease renewals across the worker's concurrent attempts. */
  starter: AttemptStarter;
  completer: AttemptCompleter;
  leases: LeaseKeeper;
  /** Bounds the calls in flight (WORKER_CONCURRENCY; absent: unbounded, as in tests that run one message). */
  slots?: CallSlots;
  /**
   * Bounds the attempts starting or started and waiting for a call slot, so the start statement of the
   * next attempts overlaps the calls in flight instead of holding a call slot (absent: unbounded).
   */
  startSlots?: CallSlots;
  /** The tenant's valid signing secrets (cached by the caller). */
  secretsFor: (tenantId: string) => Promise<string[]>;
  /** After a retry commits: tell the due index (best effort). */
  noteDue: (shard: number, tenantId: string, dueAtMs: number) => Promise<void>;
  /**
   * Spans: each attempt's call to the target is an "attempt" span, a child of the job's trace, whose
   * IDs are the traceparent the target receives. Off (NO_TRACING): no span, only a new span ID to send.
   */
  tracing: Tracing;
  /** An attempt started on the single path (the batched starter reports its own): for the scheduling lag metric. */
  onStarted?: (started: sql.StartedAttempt) => void;
  random?: () => number;
}

export type RunOutcome =
  | { kind: "discarded"; reason: string }
  | { kind: "lease_lost" }
  | { kind: "completed"; status: string }
  | { kind: "late_completion" };

function decide(started: sql.StartedAttempt, result: HttpCallResult, now: Date, random: () => number): { decision: sql.AttemptDecision; outcome: string; error: unknown; result: unknown } {
  if (result.blocked) {
    return { decision: { kind: "dead" }, outcome: "non_retryable", error: { kind: "target_not_allowed", message: result.blocked }, result: null };
  }
  const classified = classifyHttpOutcome({
    status: result.status,
    timedOut: result.timedOut,
    networkError: result.networkError !== undefined,
    retryAfterHeader: result.retryAfter ?? undefined,
    now,
  });
  const decision = decideAttemptOutcome({
    ended: classified.kind,
    attemptCount: started.attempt_count,
    maxAttempts: started.max_attempts,
    backoff: started.backoff,
    retryAfterMs: classified.kind === "retry_after" ? classified.retryAfterMs : undefined,
    now,
    expiresAt: started.expires_at,
    // A cancel recorded while the attempt ran is applied by the completion statement, which sees it.
    cancelRequested: false,
    random,
  });
  if (classified.kind === "success") return { decision, outcome: "success", error: null, result: { status: result.status, body: result.body ?? "" } };
  const error = {
    kind: classified.kind,
    status: result.status ?? null,
    message: result.networkError ?? (result.timedOut ? "timed out" : `HTTP ${result.status}`),
    body: result.body?.slice(0, 2048) ?? null,
  };
  return { decision, outcome: classified.kind, error, result: null };
}

/**
 * The headers of a call to the job's target: the job's own, then Tick's (which win over the job's): the
 * stable Idempotency-Key (S6), the job, attempt and fencing token, the signature, the trace context of the
 * attempt's span (W3C traceparent and tracestate), the user agent, and a JSON content type when the job
 * sends a body without one.
 */
function targetHeaders(started: sql.StartedAttempt, attemptId: string, secrets: string[], trace: TraceContext): Record<string, string> {
  const headers: Record<string, string> = {};
  let hasContentType = false;
  for (const name in started.headers) {
    // A job stored before the API reserved them may carry its own trace headers: the attempt's win.
    if (TRACE_HEADER.test(name)) continue;
    headers[name] = started.headers[name]!;
    if (!hasContentType && name.toLowerCase() === "content-type") hasContentType = true;
  }
  headers["idempotency-key"] = started.idempotency_key ?? `tick-job-${started.job_id}`;
  headers["tick-job-id"] = started.job_id;
  headers["tick-attempt-id"] = attemptId;
  headers["tick-attempt-number"] = String(started.attempt_number);
  headers["tick-fencing-token"] = started.fencing_token;
  headers.traceparent = formatTraceparent(trace);
  if (trace.traceState) headers.tracestate = trace.traceState;
  if (secrets.length > 0) {
    const signed = signTargetRequest(secrets, attemptId, Math.floor(Date.now() / 1000), started.body);
    headers["tick-timestamp"] = signed["tick-timestamp"]!;
    headers["tick-signature"] = signed["tick-signature"]!;
  }
  headers["user-agent"] = "tick-scheduler/1";
  if (started.body !== null && !hasContentType) headers["content-type"] = "application/json";
  return headers;
}

const TRACE_HEADER = /^trace(parent|state)$/i;

/*
 * The attempt path: one dispatch message: the pre-execution check and start (S15), the HTTP call under a lease
 * renewed by heartbeat (aborted if a renewal is refused: S7), then a completion fenced on the attempt's
 * fencing token and the job's version. Every attempt carries the job's stable Idempotency-Key (S6).
 */

/** Longest a worker holds a replayed message waiting for its replay's start gate before handing it back. */
const MAX_PACED_WAIT_MS = 2_000;

/**
 * startAttempt, waiting at the start gate of a DLQ replay (S17) when the job is a replayed one: short
 * waits are slept here; a long one (a backlog of replayed messages) hands the job back to the scheduler
 * with that delay, without burning an attempt.
 */
async function startPaced(deps: AttemptRunnerDeps, config: AttemptRunnerConfig, msg: AttemptMessage): Promise<{ started: sql.StartedAttempt | null; sentAt: number } | "requeued"> {
  // The common case goes in the worker's next start batch; the rest (a replayed job, one that cannot
  // start, a failed batch) takes the single path below, which decides and waits at the start gate.
  const batched = await deps.starter.start({ attemptId: msg.attemptId, jobId: msg.jobId, version: msg.version });
  if (batched) return batched;
  const args = { attemptId: msg.attemptId, jobId: msg.jobId, version: msg.version, workerId: config.workerId, leaseMs: config.leaseMs };
  const deadline = performance.now() + MAX_PACED_WAIT_MS;
  for (;;) {
    // When the statement that grants the lease was sent: the lease cannot have started any earlier.
    const sentAt = performance.now();
    const started = await sql.startAttempt(deps.pool, args);
    if (!sql.isPaced(started)) {
      if (started) deps.onStarted?.(started);
      return { started, sentAt };
    }
    if (performance.now() + started.pacedForMs > deadline) {
      const requeued = await sql.requeueAttempt(deps.pool, { attemptId: msg.attemptId, jobId: msg.jobId, version: msg.version, delayMs: started.pacedForMs, reason: "replay_paced" });
      if (requeued) await deps.noteDue(requeued.shard, requeued.tenant_id, requeued.due_at.getTime()).catch(() => {});
      return "requeued";
    }
    await new Promise((r) => setTimeout(r, started.pacedForMs));
  }
}

/**
 * Runs every attempt a dispatch message carries (a chunk's, or the single one of a re-publish), each
 * on its own in a call slot, lowest rank first. Resolves once all are done; if any failed unexpectedly
 * (its start could not reach Postgres, say), rejects after the others finished, so the message counts as
 * failed and the reaper re-publishes what did not start.
 */
export async function runMessage(deps: AttemptRunnerDeps, config: AttemptRunnerConfig, data: unknown): Promise<RunOutcome[]> {
  const attempts = attemptsOfMessage(data);
  // The dispatch round's span, when the scheduler traces: each attempt's span links to it.
  const dispatch = deps.tracing.enabled ? parseTraceparent((data as { traceparent?: unknown } | null)?.traceparent as string | undefined) : null;
  const settled = await Promise.allSettled(attempts.map((raw) => runAttempt(deps, config, raw, dispatch)));
  const failed = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed.length > 0) {
    if (failed.length === 1) throw failed[0]!.reason;
    throw new AggregateError(failed.map((f) => f.reason as unknown), `${failed.length} of ${attempts.length} attempts of the message failed`);
  }
  return settled.map((s) => (s as PromiseFulfilledResult<RunOutcome>).value);
}

/**
 * Runs one attempt. Its fair rank (the dispatcher's; lower goes first) orders it at both gates: a start
 * slot is taken for the start statement and held until a call slot is free; the call slot is held for the
 * call only. So at most WORKER_CONCURRENCY calls are in flight, at most as many attempts more are started
 * and about to call (their start overlaps the calls, as a peer's prefetch does), and the completion runs
 * outside both. A malformed message is discarded before it takes a slot.
 */
export async function runAttempt(deps: AttemptRunnerDeps, config: AttemptRunnerConfig, raw: unknown, dispatch: TraceContext | null = null): Promise<RunOutcome> {
  const parsed = attemptMessageSchema.safeParse(raw);
  if (!parsed.success) {
    deps.metrics.discarded.inc({ reason: "malformed" });
    deps.logger.error({ issues: parsed.error.issues }, "malformed dispatch message discarded");
    return { kind: "discarded", reason: "malformed" };
  }
  const msg: AttemptMessage = parsed.data;
  const rank = msg.rank ?? 0;
  const releaseStart = deps.startSlots ? await deps.startSlots.acquire(rank) : () => {};
  try {
    return await runInSlots(deps, config, { msg, rank, releaseStart, dispatch });
  } finally {
    releaseStart();
  }
}

/** One dispatch message on its way: its fair rank, the start slot it holds (released once it holds a call slot), its dispatch's trace. */
interface Incoming {
  msg: AttemptMessage;
  rank: number;
  releaseStart: () => void;
  dispatch: TraceContext | null;
}

async function runInSlots(deps: AttemptRunnerDeps, config: AttemptRunnerConfig, incoming: Incoming): Promise<RunOutcome> {
  const { pool, metrics } = deps;
  const { msg } = incoming;

  // Downstream protection (S11): an open breaker or a spent retry budget hands the job back without
  // starting it, so no attempt is burned. If Redis cannot answer, the attempt runs (fail open).
  const dependency = msg.dependency ?? null;
  // The tenant's own breaker for it: another tenant's failures against the same key never hold these jobs.
  const breaker = dependency ? { tenantId: msg.tenantId, dependency } : null;
  if (breaker) {
    const admission = await deps.breakers.admit(breaker, (msg.attemptCount ?? 0) > 0).catch(() => "allowed" as const);
    if (admission !== "allowed") {
      const delayMs = admission === "open" ? deps.breakers.policy.openMs : 1_000 + Math.floor((deps.random ?? Math.random)() * 4_000);
      const requeued = await sql.requeueAttempt(pool, { attemptId: msg.attemptId, jobId: msg.jobId, version: msg.version, delayMs, reason: admission });
      if (requeued) await deps.noteDue(requeued.shard, requeued.tenant_id, requeued.due_at.getTime()).catch(() => {});
      metrics.discarded.inc({ reason: admission });
      return { kind: "discarded", reason: admission };
    }
  }
  // The admission holds the breaker (a half-open probe's slot): whatever way the attempt ends, it is given
  // back unless the call's health was recorded on it.
  let recorded = false;
  try {
    return await runAdmitted(deps, config, incoming, breaker, () => {
      recorded = true;
    });
  } finally {
    if (breaker && !recorded) await deps.breakers.release(breaker).catch(() => {});
  }
}

/** runInSlots once the breaker (if any) admitted the attempt; `recorded` is called when the call's health is recorded on it. */
async function runAdmitted(
  deps: AttemptRunnerDeps,
  config: AttemptRunnerConfig,
  { msg, rank, releaseStart, dispatch }: Incoming,
  breaker: BreakerKey | null,
  recorded: () => void,
): Promise<RunOutcome> {
  const { pool, logger, metrics } = deps;
  const start = await startPaced(deps, config, msg);
  if (start === "requeued") {
    metrics.discarded.inc({ reason: "replay_paced" });
    return { kind: "discarded", reason: "replay_paced" };
  }
  const { started } = start;
  if (!started) {
    const reason = await sql.explainUnstartable(pool, msg.attemptId, msg.jobId, msg.version);
    metrics.discarded.inc({ reason });
    logger.info({ tenantId: msg.tenantId, jobId: msg.jobId, attemptId: msg.attemptId, shard: msg.shard, epoch: msg.epoch, reason }, "dispatch message discarded");
    return { kind: "discarded", reason };
  }
  // The database clock, carried forward with the monotonic clock: retry and expiry decisions compare
  // with due and expiry times the database set, so the worker's own wall clock never enters (S13).
  const startedAt = performance.now();
  const databaseNow = () => new Date(started.db_now.getTime() + (performance.now() - startedAt));
  // Every line about the attempt names its tenant, job, attempt, shard and the dispatching epoch.
  const context = { tenantId: started.tenant_id, jobId: msg.jobId, attemptId: msg.attemptId, shard: started.shard, epoch: msg.epoch, attempt: started.attempt_number, fencingToken: started.fencing_token };

  // Heartbeat (attempt-lease.ts): renewed with the worker's other running attempts; if a renewal is
  // refused, or none succeeds before the lease would have ended, the call is stopped: another worker may
  // own this job now. The lease is measured from when the granting statement was sent.
  const lease = deps.leases.hold(msg.attemptId, start.sentAt);

  // S7, narrowed: do not send unless the lease still has at least one heartbeat interval to run. A worker
  // frozen (SIGSTOP, a long GC, CPU starvation) past that point may have been replaced by the reaper and
  // another worker; sending now would repeat the effect. A pause between this check and the send cannot
  // be seen; the target's fencing-token check covers that window.
  const mayStillSend = lease.mayStillSend;
  let result: HttpCallResult;
  let span: TickSpan | undefined;
  const releaseCall = deps.slots ? await deps.slots.acquire(rank) : () => {};
  releaseStart();
  try {
    const secrets = await deps.secretsFor(started.tenant_id).catch(() => []);
    deps.faults.hit("worker.before-send");
    // The attempt's span: a child of the job's trace; the target receives its IDs as the traceparent.
    span = startAttemptSpan(deps.tracing, started, msg, dispatch);
    result = await deps.http.call({
      method: started.method,
      url: started.url,
      headers: targetHeaders(started, msg.attemptId, secrets, span.context),
      body: started.body,
      timeoutMs: started.timeout_ms,
      cancellation: lease,
      mayStillSend,
    });
  } catch (err) {
    span?.fail((err as Error).message);
    span?.end();
    throw err;
  } finally {
    lease.release();
    releaseCall();
  }
  endAttemptSpan(span, result, lease.lost());
  if (result.withheld !== undefined) {
    metrics.sendsWithheld.inc();
    logger.warn({ ...context, reason: result.withheld }, "attempt given up before sending: its lease may have been taken over (the reaper retries the job)");
    return { kind: "lease_lost" };
  }
  if (lease.lost() || result.aborted) {
    metrics.leaseLost.inc();
    logger.warn(context, "attempt abandoned: lease lost (the reaper retries the job)");
    return { kind: "lease_lost" };
  }
  deps.faults.hit("worker.after-call-before-complete");
  if (breaker && !result.blocked) {
    recorded();
    // A 4xx other than 408/425/429 is the dependency answering properly; only signs of ill health count.
    const healthy = result.status !== undefined && (result.status < 500 && ![408, 425, 429].includes(result.status));
    const state = await deps.breakers.record(breaker, healthy).catch(() => null);
    if (state === "opened") {
      metrics.breakerOpened.inc({ dependency: breaker.dependency });
      logger.warn({ dependency: breaker.dependency, ...context }, "dependency is failing: circuit breaker open, its jobs are held (not our scheduler failing)");
      await recordOpening(deps, breaker, msg.jobId);
    }
  }

  const { decision, outcome, error, result: jobResult } = decide(started, result, databaseNow(), deps.random ?? Math.random);
  const completion = await deps.completer.complete({
    attemptId: msg.attemptId,
    jobId: msg.jobId,
    version: started.version,
    fencingToken: started.fencing_token,
    outcome,
    decision,
    httpStatus: result.status ?? null,
    error,
    result: jobResult,
    durationMs: result.durationMs,
  });
  if (!completion.won) {
    metrics.lateCompletions.inc();
    logger.warn(context, "late completion refused: the attempt's lease was taken over (duplicate signal recorded)");
    return { kind: "late_completion" };
  }
  metrics.completed.inc({ status: completion.status ?? decision.kind });
  if (completion.status === "scheduled" && completion.dueAt) {
    await deps.noteDue(started.shard, started.tenant_id, completion.dueAt.getTime()).catch(() => {});
  }
  // Built only when it is written: otherwise the line's object per job shows in the worker's profile even at level warn.
  if (logger.isLevelEnabled("info")) logger.info({ ...context, status: completion.status, outcome, httpStatus: result.status, durationMs: result.durationMs }, "attempt completed");
  return { kind: "completed", status: completion.status ?? decision.kind };
}

/** Starts an attempt's span (kind client: the call to the target). Off, it only mints the span ID to send. */
function startAttemptSpan(tracing: Tracing, started: sql.StartedAttempt, msg: AttemptMessage, dispatch: TraceContext | null): TickSpan {
  const parent = storedTraceContext(started.traceparent, started.tracestate);
  if (!tracing.enabled) return tracing.startSpan("attempt", { parent });
  let target: URL | null = null;
  try {
    target = new URL(started.url);
  } catch {
    // The call reports the bad URL; the span goes without the address.
  }
  return tracing.startSpan("attempt", {
    kind: "client",
    parent,
    links: dispatch ? [dispatch] : undefined,
    attributes: {
      "tick.tenant.id": started.tenant_id,
      "tick.job.id": started.job_id,
      "tick.attempt.id": msg.attemptId,
      "tick.attempt.number": started.attempt_number,
      "tick.fencing_token": started.fencing_token,
      "tick.queue": started.queue,
      "tick.dependency": started.dependency_key,
      "tick.shard": started.shard,
      "http.request.method": started.method,
      // Host and port only: a URL's path and query may carry a tenant's secrets.
      "server.address": target?.hostname,
      "server.port": target ? Number(target.port || (target.protocol === "https:" ? 443 : 80)) : undefined,
      "url.scheme": target?.protocol.replace(":", ""),
    },
  });
}

/** Why a call did not answer with a success status, or null. */
function callFailure(result: HttpCallResult, leaseLost: boolean): string | null {
  if (result.withheld !== undefined) return `not sent: ${result.withheld}`;
  if (leaseLost || result.aborted) return "lease lost";
  if (result.blocked) return `address not allowed: ${result.blocked}`;
  if (result.timedOut) return "timed out";
  if (result.networkError) return result.networkError;
  if (result.status !== undefined && result.status >= 400) return `HTTP ${result.status}`;
  return null;
}

/** Ends an attempt's span with what the call came to: the response status, or why there was none. */
function endAttemptSpan(span: TickSpan | undefined, result: HttpCallResult, leaseLost: boolean): void {
  if (!span?.recording) return;
  span.setAttributes({ "http.response.status_code": result.status, "tick.attempt.duration_ms": result.durationMs });
  const failure = callFailure(result, leaseLost);
  if (failure !== null) span.fail(failure);
  span.end();
}

/**
 * Keeps the opening for the console's chart (rare: once per opening, by the one worker whose outcome opened
 * it). Best effort: the breaker is open whether or not this row is written.
 */
async function recordOpening(deps: AttemptRunnerDeps, breaker: BreakerKey, jobId: string): Promise<void> {
  const { tenantId, dependency } = breaker;
  try {
    const openUntil = (await deps.breakers.inspect(tenantId, [dependency])).get(dependency)?.openUntil ?? null;
    await sql.recordBreakerOpening(deps.pool, { dependencyKey: dependency, tenantId, jobId, openUntil: openUntil === null ? null : new Date(openUntil) });
  } catch (err) {
    deps.logger.warn({ dependency, err }, "breaker opening not recorded for the overview chart");
  }
}
