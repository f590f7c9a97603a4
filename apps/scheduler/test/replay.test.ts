import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sql } from "@tick/db";
import { createWorld, type World } from "./harness.js";

// The scheduler's replay loop driven round by round against real Postgres and Redis; workers are
// played by the same SQL the worker runs (startAttempt, completeAttempts).

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w?.close();
});

type Tenant = Awaited<ReturnType<World["createTenant"]>>;

/** Dead jobs as the worker leaves them: one failed attempt used up, an error, an idempotency key. */
async function insertDeadJobs(t: Tenant, count: number, priority = 0): Promise<string[]> {
  const { rows } = await w.pool.query<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, priority, url, updated_at, finished_at, attempt_count, max_attempts,
                       fencing_token, idempotency_key, last_error, dependency_key)
     SELECT gen_random_uuid(), $1, $2, $3, 'dead', now() - interval '1 hour', $5::int, 'https://93.184.216.34/x', now(),
            now() - interval '1 hour' + make_interval(secs => g), 1, 1, 1, 'key-' || $5::int || '-' || g,
            '{"kind":"retryable","status":503}', '93.184.216.34'
       FROM generate_series(1, $4) g
     RETURNING id`,
    [t.id, t.queueId, t.shard, count, priority],
  );
  return rows.map((r) => r.id);
}

async function startReplay(t: Tenant, options: Partial<{ rate: number; threshold: number; window: number; attempts: number; jobIds: string[] }> = {}) {
  const replay = await sql.createReplay(w.pool, {
    tenantId: t.id,
    shard: t.shard,
    actor: "user:test",
    filter: {},
    selection: { match: {}, jobIds: options.jobIds ?? null },
    ratePerSecond: options.rate ?? 10,
    failureThreshold: options.threshold ?? 0.5,
    failureWindow: options.window ?? 20,
    attempts: options.attempts ?? 1,
    maxJobs: 100_000,
  });
  return replay!;
}

/** Plays a worker for every dispatched attempt: starts it and ends it as `ok` says. */
async function runDispatched(ok: (jobId: string) => boolean): Promise<number> {
  const { rows } = await w.pool.query<{ attempt_id: string; job_id: string; version: number }>(
    `SELECT a.id AS attempt_id, j.id AS job_id, j.version FROM attempts a JOIN jobs j ON j.current_attempt_id = a.id WHERE a.status = 'pending' AND j.status = 'dispatched'`,
  );
  for (const r of rows) {
    let started: sql.StartedAttempt | sql.PacedStart | null = await sql.startAttempt(w.pool, { attemptId: r.attempt_id, jobId: r.job_id, version: r.version, workerId: "test", leaseMs: 30_000 });
    while (sql.isPaced(started)) {
      await new Promise((resolve) => setTimeout(resolve, (started as sql.PacedStart).pacedForMs));
      started = await sql.startAttempt(w.pool, { attemptId: r.attempt_id, jobId: r.job_id, version: r.version, workerId: "test", leaseMs: 30_000 });
    }
    const success = ok(r.job_id);
    await sql.completeAttempts(w.pool, [{
      attemptId: r.attempt_id,
      jobId: r.job_id,
      version: (started as sql.StartedAttempt).version,
      fencingToken: (started as sql.StartedAttempt).fencing_token,
      outcome: success ? "success" : "retryable",
      decision: success ? { kind: "succeeded" } : { kind: "dead" },
      httpStatus: success ? 200 : 503,
      error: success ? null : { kind: "retryable", status: 503 },
      result: null,
      durationMs: 5,
    }]);
  }
  return rows.length;
}

/** Skips the wait for released jobs' due slots (pacing itself is checked in the first test). */
const dueNow = () => w.pool.query(`UPDATE jobs SET due_at = now() WHERE status = 'scheduled'`);

const replayRow = async (id: string) => (await w.pool.query<sql.ReplayRow>(`SELECT * FROM dlq_replays WHERE id = $1`, [id])).rows[0]!;
const auditActions = async (id: string) =>
  (await w.pool.query<{ action: string; actor_type: string }>(`SELECT action, actor_type FROM audit_log WHERE target_id = $1 ORDER BY id`, [id])).rows;

describe("DLQ replay loop", () => {
  it("releases the highest priority first, one due slot every 1/rate seconds, each job with a fresh attempt budget and its key", async () => {
    const t = await w.createTenant();
    const low = await insertDeadJobs(t, 20, 0);
    const high = await insertDeadJobs(t, 5, 9);
    const replay = await startReplay(t, { rate: 10, attempts: 2 });
    expect(replay.total).toBe(25);
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();

    expect(await s.replayOnce()).toBe(10); // one second's horizon at 10/s
    const { rows } = await w.pool.query<{ id: string; priority: number; due_ms: number; status: string; version: number; max_attempts: number; attempt_count: number; idempotency_key: string; replay_id: string }>(
      `SELECT id, priority, (extract(epoch FROM due_at) * 1000)::float8 AS due_ms, status, version, max_attempts, attempt_count, idempotency_key, replay_id
         FROM jobs WHERE status = 'scheduled' ORDER BY due_at`,
    );
    expect(rows).toHaveLength(10);
    expect(rows.slice(0, 5).every((r) => high.includes(r.id))).toBe(true);
    expect(rows.slice(5).every((r) => low.includes(r.id) && r.priority === 0)).toBe(true);
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.due_ms - rows[i - 1]!.due_ms).toBeCloseTo(100, 0);
    expect(rows.every((r) => r.version === 2 && r.max_attempts === 2 && r.replay_id === replay.id && r.attempt_count === 0 && r.idempotency_key.startsWith("key-"))).toBe(true);

    // Nothing more until the horizon moves: the slots ahead are taken.
    expect(await s.replayOnce()).toBe(0);
    const progress = await replayRow(replay.id);
    expect(progress).toMatchObject({ released: 10, status: "running" });
  });

  it("gives replayed jobs new attempt IDs, tallies outcomes, completes, and audits the completion", async () => {
    const t = await w.createTenant();
    const ids = await insertDeadJobs(t, 6);
    await w.pool.query(
      `INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, dispatched_at, finished_at)
       SELECT gen_random_uuid(), id, tenant_id, 1, 1, 1, 1, 'failed', now(), now() FROM jobs WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    const replay = await startReplay(t, { rate: 1_000 });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    await s.replayOnce();
    await s.dispatchOnce();
    expect(await runDispatched((id) => id !== ids[0])).toBe(6);
    await s.replayOnce();

    const r = await replayRow(replay.id);
    expect(r).toMatchObject({ status: "completed", total: 6, released: 6, succeeded: 5, failed: 1, skipped: 0 });
    expect(r.finished_at).not.toBeNull();
    const attempts = await w.pool.query<{ job_id: string; n: number; ids: number }>(
      `SELECT job_id, count(*)::int AS n, count(DISTINCT id)::int AS ids FROM attempts WHERE job_id = ANY($1::uuid[]) GROUP BY job_id`,
      [ids],
    );
    expect(attempts.rows.every((a) => a.n === 2 && a.ids === 2)).toBe(true);
    expect((await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE status = 'dead'`)).rows[0]!.n).toBe(1);
    expect(await auditActions(replay.id)).toEqual([{ action: "dlq.replay.completed", actor_type: "system" }]);
  });

  it("pauses itself when replayed jobs keep failing, says why, and releases nothing more until resumed", async () => {
    const t = await w.createTenant();
    await insertDeadJobs(t, 100);
    const replay = await startReplay(t, { rate: 20, window: 10, threshold: 0.5 });
    const s = w.startScheduler("s", {});
    await s.init();
    await s.leaseTick();
    expect(await s.replayOnce()).toBe(20);
    await dueNow();
    await s.dispatchOnce();
    await runDispatched(() => false);
    await s.replayOnce();

    const paused = await replayRow(replay.id);
    expect(paused.status).toBe("auto_paused");
    expect(paused.status_reason).toContain("10 of the last 10 replayed jobs failed again (100%, threshold 50%)");
    expect(paused.status_reason).toContain("http_status 503");
    const released = paused.released;
    expect(released).toBeLessThan(100);
    expect(await auditActions(replay.id)).toEqual([{ action: "dlq.replay.auto_paused", actor_type: "system" }]);

    expect(await s.replayOnce()).toBe(0);
    expect((await replayRow(replay.id)).released).toBe(released);

    // The operator fixes the target and resumes: judged afresh, the rest is released and succeeds.
    expect(await sql.applyReplayAction(w.pool, t.id, replay.id, "resume", "running")).not.toBeNull();
    for (let i = 0; i < 20 && (await replayRow(replay.id)).status === "running"; i++) {
      await s.replayOnce();
      await dueNow();
      await s.dispatchOnce();
      await runDispatched(() => true);
      await w.pool.query(`UPDATE dlq_replays SET next_slot_at = NULL WHERE id = $1`, [replay.id]);
    }
    const done = await replayRow(replay.id);
    expect(done).toMatchObject({ status: "completed", released: 100, succeeded: 100 - released, failed: released });
  });

  it("a replay with nothing left to release or in flight completes, even one that was paused, instead of offering a resume that does nothing", async () => {
    const t = await w.createTenant();
    await insertDeadJobs(t, 10);
    // All ten released at once; every one fails again: the rate would pause it, but nothing is left to protect.
    const replay = await startReplay(t, { rate: 1_000, window: 10, threshold: 0.5 });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    expect(await s.replayOnce()).toBe(10);
    await dueNow();
    await s.dispatchOnce();
    await runDispatched(() => false);
    await s.replayOnce();
    expect(await replayRow(replay.id)).toMatchObject({ status: "completed", released: 10, failed: 10 });
    expect((await replayRow(replay.id)).status_reason).toContain("Every job was replayed, but 10 of the last 10 replayed jobs failed again (100%, threshold 50%)");
    expect((await replayRow(replay.id)).finished_at).not.toBeNull();

    // One left auto-paused with its work all settled (the row set so by hand): completed on the next round.
    const three = await insertDeadJobs(t, 3);
    const stuck = await startReplay(t, { rate: 1_000, jobIds: three });
    expect(await s.replayOnce()).toBe(3);
    await dueNow();
    await s.dispatchOnce();
    await runDispatched(() => true);
    await w.pool.query(`UPDATE dlq_replays SET status = 'auto_paused', status_reason = 'paused by an old verdict' WHERE id = $1`, [stuck.id]);
    await s.replayOnce();
    expect(await replayRow(stuck.id)).toMatchObject({ status: "completed", succeeded: 3, status_reason: null });
    const actions = await auditActions(stuck.id);
    expect(actions).toEqual([{ action: "dlq.replay.completed", actor_type: "system" }]);
  });

  it("cancel withdraws what is not released yet (those jobs stay dead) and closes once released jobs settle", async () => {
    const t = await w.createTenant();
    await insertDeadJobs(t, 30);
    const replay = await startReplay(t, { rate: 5 });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    expect(await s.replayOnce()).toBe(5);

    const cancelled = await sql.applyReplayAction(w.pool, t.id, replay.id, "cancel", "cancelled");
    expect(cancelled).toMatchObject({ status: "cancelled", skipped: 25, finished_at: null });
    expect((await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE status = 'dead'`)).rows[0]!.n).toBe(25);
    expect(await s.replayOnce()).toBe(0);

    await dueNow();
    await s.dispatchOnce();
    await runDispatched(() => true);
    await s.replayOnce();
    expect(await replayRow(replay.id)).toMatchObject({ status: "cancelled", succeeded: 5, skipped: 25 });
    expect((await replayRow(replay.id)).finished_at).not.toBeNull();
    // The withdrawn jobs are free for another replay.
    expect((await startReplay(t)).total).toBe(25);
  });

  it("a job held by an unfinished replay is not taken by a second one; a job no longer dead at its turn is skipped", async () => {
    const t = await w.createTenant();
    const ids = await insertDeadJobs(t, 4);
    const first = await startReplay(t, { jobIds: ids.slice(0, 2) });
    expect(first.total).toBe(2);
    const second = await startReplay(t);
    expect(second.total).toBe(2);
    expect(await sql.createReplay(w.pool, { tenantId: t.id, shard: t.shard, actor: "user:test", filter: {}, selection: { match: {}, jobIds: null }, ratePerSecond: 1, failureThreshold: 0.5, failureWindow: 20, attempts: 1, maxJobs: 10 })).toBeNull();

    await w.pool.query(`UPDATE jobs SET status = 'cancelled' WHERE id = $1`, [ids[0]]);
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    await s.replayOnce();
    expect(await replayRow(first.id)).toMatchObject({ released: 1, skipped: 1 });
  });

  it("a scheduler that lost the shard releases nothing (its round is fenced)", async () => {
    const t = await w.createTenant();
    await insertDeadJobs(t, 10);
    await startReplay(t);
    const stale = w.startScheduler("stale");
    await stale.init();
    await stale.leaseTick();
    // Another scheduler takes the shard over (the stale one was frozen past its lease).
    await w.pool.query(`UPDATE shard_leases SET expires_at = now() - interval '1 second'`);
    await w.pool.query(`UPDATE scheduler_nodes SET expires_at = now() - interval '1 second' WHERE id = 'stale'`);
    const fresh = w.startScheduler("fresh");
    await fresh.init();
    await fresh.leaseTick();
    expect(await stale.replayOnce()).toBe(0);
    expect((await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE status = 'scheduled'`)).rows[0]!.n).toBe(0);
    expect(await fresh.replayOnce()).toBe(10);
  });
});
