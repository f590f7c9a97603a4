import type { z } from "zod";
import { AppError, REPLAY_DEFAULTS, isReplayActionRepeat, replayTransition } from "@tick/core";
import type { createReplaySchema, dlqQuerySchema } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import type pg from "pg";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { fetchKeysetPage } from "../api/keyset-cursor";
import { writeAudit } from "./audit";
import { attemptView, jobView, replayView } from "./views";
import { actorNames, parseActor } from "./actor-names";
import type { TenantServiceDeps } from "./tenant-service-deps";

type CreateReplay = z.output<typeof createReplaySchema>;

const SAMPLE_SIZE = 10;

function selectionOf(input: CreateReplay): sql.ReplaySelection {
  return { match: input.filter ?? {}, jobIds: input.jobIds ?? null };
}

/** What a replay records as its filter: the request's selection, as given. */
const recordedFilter = (input: CreateReplay) => ({ ...(input.filter ? { filter: input.filter } : {}), ...(input.jobIds ? { jobIds: input.jobIds } : {}) });

/**
 * A dry run (count and sample, nothing changes, audited as a preview) or a new running replay with its
 * items, the creation audited in the same transaction. The scheduler holding the tenant's shard takes
 * it from there.
 */
/** A page of the tenant's dead jobs (the DLQ), newest death first, each with its attempts (GET /dlq). */
export async function listDeadJobs({ pool }: Pick<TenantServiceDeps, "pool">, tenantId: string, query: z.output<typeof dlqQuerySchema>) {
  const { page, nextCursor } = await fetchKeysetPage(
    query,
    (window) =>
      sql.listDeadJobs(pool, tenantId, {
        queue: query.queue,
        errorKind: query.errorKind,
        dependency: query.dependency,
        httpStatus: query.httpStatus,
        since: query.since,
        until: query.until,
        ...window,
      }),
    (r) => r.finished_at!, // dead jobs are ordered by when they died
  );
  const attempts = await sql.listAttemptsOfJobs(pool, tenantId, page.map((r) => r.id));
  return { data: page.map((r) => ({ ...jobView(r), attempts: attempts.filter((a) => a.job_id === r.id).map(attemptView) })), nextCursor };
}

export async function createReplay({ pool, prisma }: TenantServiceDeps, principal: ApiPrincipal, input: CreateReplay) {
  const tenantId = principal.tenant.id;
  const selection = selectionOf(input);
  if (input.dryRun) {
    const preview = await sql.previewReplay(pool, tenantId, selection, SAMPLE_SIZE);
    const wouldTake = Math.min(preview.count, REPLAY_DEFAULTS.maxJobs);
    await writeAudit(prisma, { ...auditActor(principal), action: "dlq.replay.dry_run", targetType: "dlq", details: { ...recordedFilter(input), count: preview.count } });
    return {
      status: 200,
      body: { dryRun: true as const, count: preview.count, wouldTake, sample: preview.sample.map((j) => jobView(j)), estimatedSeconds: wouldTake / input.ratePerSecond },
    };
  }
  const id = await inTransaction(pool, async (client) => {
    const replay = await sql.createReplay(client, {
      tenantId,
      shard: principal.tenant.shard,
      actor: `${principal.actor.type}:${principal.actor.id}`,
      filter: recordedFilter(input),
      selection,
      ratePerSecond: input.ratePerSecond,
      failureThreshold: input.failureThreshold,
      failureWindow: input.failureWindow,
      attempts: input.attempts,
      maxJobs: REPLAY_DEFAULTS.maxJobs,
    });
    if (!replay) throw new AppError("nothing_to_replay", "No dead job matches, or every match is already held by another replay.");
    await sql.insertAudit(client, {
      ...auditActor(principal),
      action: "dlq.replay.created",
      targetType: "dlq_replay",
      targetId: replay.id,
      details: { ...recordedFilter(input), total: replay.total, ratePerSecond: replay.rate_per_second, failureThreshold: replay.failure_threshold, attempts: replay.attempts },
    });
    return replay.id;
  });
  return { status: 201, body: (await replayViews(pool, tenantId, [(await sql.findReplay(pool, tenantId, id))!]))[0]! };
}

export async function getReplay({ pool }: Pick<TenantServiceDeps, "pool">, tenantId: string, id: string) {
  const replay = await sql.findReplay(pool, tenantId, id);
  if (!replay) throw new AppError("not_found", "No such replay.");
  return (await replayViews(pool, tenantId, [replay]))[0]!;
}

/** Replays as the API shows them, each with who started it by name (one lookup for the page). */
async function replayViews(pool: pg.Pool, tenantId: string, replays: sql.ReplayWithProgress[]) {
  const nameOf = await actorNames(pool, tenantId, replays.map((r) => parseActor(r.actor)));
  return replays.map((r) => replayView(r, nameOf(parseActor(r.actor))));
}

export async function listReplays({ pool }: TenantServiceDeps, tenantId: string, query: { limit: number; cursor?: string }) {
  const { page, nextCursor } = await fetchKeysetPage(query, (window) => sql.listReplays(pool, tenantId, window), (r) => r.created_at);
  return { data: await replayViews(pool, tenantId, page), nextCursor };
}

/** Pause, resume or cancel, audited in the same transaction; a repeat is answered as done; 409 when the replay's state does not allow it. */
export async function changeReplay({ pool }: TenantServiceDeps, principal: ApiPrincipal, id: string, action: "pause" | "resume" | "cancel") {
  const tenantId = principal.tenant.id;
  await inTransaction(pool, async (client) => {
    const current = await sql.findReplay(client, tenantId, id);
    if (!current) throw new AppError("not_found", "No such replay.");
    // Already where the action leads: a repeat (say, after an outcome_unknown answer) is answered as done.
    if (isReplayActionRepeat(current.status, action)) return;
    const to = replayTransition(current.status, action);
    const changed = to && (await sql.applyReplayAction(client, tenantId, id, action, to));
    if (!changed) throw new AppError("conflict", `The replay is ${current.status.replace("_", "-")}; it cannot be ${action === "pause" ? "paused" : action === "resume" ? "resumed" : "cancelled"}.`);
    await sql.insertAudit(client, {
      ...auditActor(principal),
      action: `dlq.replay.${action === "pause" ? "paused" : action === "resume" ? "resumed" : "cancelled"}`,
      targetType: "dlq_replay",
      targetId: id,
      details: { from: current.status, released: current.released, total: current.total, ...(current.status_reason ? { reason: current.status_reason } : {}) },
    });
  });
  return getReplay({ pool }, tenantId, id);
}
