// The scheduler's metrics (docs/observability.md) move when their event happens: rounds driven by
// hand against the real Postgres and Redis, values read from the scheduler's registry.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import type { Counter, Gauge } from "prom-client";
import { sql } from "@tick/db";
import { waitFor } from "@tick/testing";
import { SHARDS, createWorld, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

/** The sum of a metric's series whose labels match. */
async function value(metric: Counter<string> | Gauge<string>, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((sum, v) => sum + v.value, 0);
}
const seriesCount = async (metric: Counter<string> | Gauge<string>) => (await metric.get()).values.length;

describe("scheduler metrics", () => {
  it("dispatch per tenant, the queue sample (waiting, overdue, oldest wait, DLQ) per tenant and queue, and the due tenants Postgres and the index see", async () => {
    const s = w.startScheduler("a");
    await s.init();
    await s.leaseTick();
    const a = await w.createTenant();
    // On different shards: the polling round's index rebuild lists both tenants as due, and the index check
    // below expects a's shard to list no one once a's entry is removed (flaky 1 time in 16 otherwise).
    let b = await w.createTenant();
    while (b.shard === a.shard) b = await w.createTenant();
    await w.insertJobs(a, 5, { dueInMs: -60_000 });
    await w.insertJobs(a, 2, { dueInMs: 3_600_000 });
    await w.insertJobs(b, 3, { dueInMs: -1_000 });
    await w.pool.query(
      `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, updated_at, finished_at) VALUES (gen_random_uuid(), $1, $2, $3, 'dead', now(), 'https://93.184.216.34/x', now(), now())`,
      [b.id, b.queueId, b.shard],
    );

    // The maintenance round samples every queue; the scheduler exports that sample.
    await s.maintainOnce();
    const m = s.metrics;
    expect(await value(m.queueJobs, { tenant: a.id, queue: "default", state: "overdue" })).toBe(5);
    expect(await value(m.queueJobs, { tenant: a.id, queue: "default", state: "waiting" })).toBe(7);
    expect(await value(m.queueJobs, { tenant: b.id, queue: "default", state: "overdue" })).toBe(3);
    expect(await value(m.queueJobs, { tenant: a.id, state: "in_flight" })).toBe(0);
    expect(await value(m.queueOldestDueAge, { tenant: a.id, queue: "default" })).toBeGreaterThanOrEqual(59);
    expect(await value(m.queueOldestDueAge, { tenant: b.id, queue: "default" })).toBeLessThan(59);
    expect(await value(m.dlqJobs, { tenant: b.id, queue: "default" })).toBe(1);
    expect(await value(m.dlqJobs, { tenant: a.id })).toBe(0);

    // The first round polls Postgres (no index yet): both tenants due; each gets its jobs dispatched.
    expect(await s.dispatchOnce()).toBe(8);
    expect(await value(m.dueTenants)).toBe(2);
    expect(await value(m.dispatched, { tenant: a.id })).toBe(5);
    expect(await value(m.dispatched, { tenant: b.id })).toBe(3);
    expect(await value(m.dispatched, { shard: String(a.shard), tenant: a.id })).toBe(5);

    // The index loses a due tenant (S9): Postgres has one, the index lists none; reconciliation repairs it.
    await w.insertJobs(a, 1, { dueInMs: -1_000 });
    const redis = new Redis(w.redis.url);
    try {
      await redis.zrem(`${w.redis.prefix}:due:${a.shard}:tenants`, a.id);
    } finally {
      redis.disconnect();
    }
    await s.reconcileOnce();
    expect(await value(m.dueTenants, { shard: String(a.shard) })).toBe(1);
    expect(await value(m.dueIndexTenants, { shard: String(a.shard) })).toBe(0);
    expect(await value(m.dueIndexRepairs)).toBe(1);
    await s.reconcileOnce();
    expect(await value(m.dueIndexTenants, { shard: String(a.shard) })).toBe(1);

    // The next sample (the maintenance loop takes one a minute) shows the dispatched jobs in flight.
    for (const shard of new Set([a.shard, b.shard])) await sql.sampleQueueGauges(w.pool, shard);
    await s.refreshQueueGauges();
    expect(await value(m.queueJobs, { tenant: a.id, state: "in_flight" })).toBe(5);
    expect(await value(m.queueJobs, { tenant: a.id, state: "overdue" })).toBe(1);
    expect(await value(m.queueJobs, { tenant: b.id, state: "overdue" })).toBe(0);
  });

  it("shard leases: acquisitions, epochs, renewals, and a takeover after the TTL that the frozen holder learns as leases lost", async () => {
    const short = { leaseTtlMs: 1_500, leaseRenewIntervalMs: 500 };
    const stale = w.startScheduler("stale", short);
    await stale.init();
    await stale.leaseTick();
    expect(await value(stale.metrics.shardCount)).toBe(SHARDS);
    expect(await value(stale.metrics.shardAcquisitions, { kind: "free" })).toBe(SHARDS);
    expect(await seriesCount(stale.metrics.shardEpoch)).toBe(SHARDS);
    const staleEpochs = new Map(stale.heldShards().map((l) => [String(l.shard), Number(l.epoch)]));
    for (const [shard, epoch] of staleEpochs) expect(await value(stale.metrics.shardEpoch, { shard })).toBe(epoch);
    await stale.leaseTick();
    expect(await value(stale.metrics.shardRenewals)).toBe(SHARDS);

    await stale.pause();
    const fresh = w.startScheduler("fresh", short);
    await waitFor(async () => (await fresh.leaseTick()).length === SHARDS, { timeoutMs: 10_000, description: "takeover after the TTL" });
    expect(await value(fresh.metrics.shardAcquisitions, { kind: "takeover" })).toBe(SHARDS);
    for (const [shard, epoch] of staleEpochs) expect(await value(fresh.metrics.shardEpoch, { shard })).toBeGreaterThan(epoch);

    // The frozen one resumes: a write is refused by the fence, and its renewal tells it the shards are gone.
    const t = await w.createTenant();
    await w.insertJobs(t, 1);
    await stale.dispatchOnce();
    expect(await value(stale.metrics.staleWrites)).toBeGreaterThanOrEqual(1);
    expect(await stale.leaseTick()).toEqual([]);
    expect(await value(stale.metrics.shardLeasesLost)).toBe(SHARDS);
    expect(await seriesCount(stale.metrics.shardEpoch)).toBe(0);
    expect(await value(stale.metrics.shardsHeld)).toBe(0);
    expect(await value(stale.metrics.dispatchRateLimit)).toBe(0);
  });

  it("dispatch held by a full broker queue is counted, with the rate cap each scheduler drains at", async () => {
    const s = w.startScheduler("a", { maxQueuedPerShard: 2, dispatchRatePerSecond: 400 });
    await s.init();
    await s.leaseTick();
    expect(await value(s.metrics.dispatchRateLimit)).toBe(400);
    const t = await w.createTenant();
    await w.insertJobs(t, 5, { dueInMs: -1_000 });
    expect(await s.dispatchOnce()).toBe(2);
    expect(await s.dispatchOnce()).toBe(0);
    expect(await value(s.metrics.dispatchThrottled, { reason: "queue_full" })).toBeGreaterThanOrEqual(1);
  });

  it("replay progress, its target's error rate and its settled outcomes, per tenant", async () => {
    const s = w.startScheduler("a");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.pool.query(
      `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, updated_at, finished_at, attempt_count, max_attempts, fencing_token, dependency_key)
       SELECT gen_random_uuid(), $1, $2, $3, 'dead', now() - interval '1 hour', 'https://93.184.216.34/x', now(), now() - interval '1 hour', 1, 1, 1, '93.184.216.34'
         FROM generate_series(1, 4)`,
      [t.id, t.queueId, t.shard],
    );
    await sql.createReplay(w.pool, {
      tenantId: t.id,
      shard: t.shard,
      actor: "user:test",
      filter: {},
      selection: { match: {}, jobIds: null },
      ratePerSecond: 1_000,
      failureThreshold: 1,
      failureWindow: 2,
      attempts: 1,
      maxJobs: 100,
    });
    await s.replayOnce();
    const m = s.metrics;
    expect(await value(m.replaysOpen, { tenant: t.id, status: "running" })).toBe(1);
    expect(await value(m.replayJobs, { tenant: t.id, state: "in_flight" })).toBe(4);
    expect(await value(m.replayJobs, { tenant: t.id, state: "pending" })).toBe(0);

    // Every replayed job fails again: the replay's judged failure rate and its failed outcomes say so.
    await w.pool.query(`UPDATE jobs SET due_at = now() WHERE status = 'scheduled'`);
    await s.dispatchOnce();
    const { rows } = await w.pool.query<{ attempt_id: string; job_id: string; version: number }>(
      `SELECT a.id AS attempt_id, j.id AS job_id, j.version FROM attempts a JOIN jobs j ON j.current_attempt_id = a.id WHERE a.status = 'pending'`,
    );
    const fail = async (r: { attempt_id: string; job_id: string; version: number }) => {
      let started = await sql.startAttempt(w.pool, { attemptId: r.attempt_id, jobId: r.job_id, version: r.version, workerId: "test", leaseMs: 30_000 });
      while (sql.isPaced(started)) {
        await new Promise((resolve) => setTimeout(resolve, (started as sql.PacedStart).pacedForMs));
        started = await sql.startAttempt(w.pool, { attemptId: r.attempt_id, jobId: r.job_id, version: r.version, workerId: "test", leaseMs: 30_000 });
      }
      const run = started as sql.StartedAttempt;
      await sql.completeAttempts(w.pool, [{
        attemptId: r.attempt_id,
        jobId: r.job_id,
        version: run.version,
        fencingToken: run.fencing_token,
        outcome: "retryable",
        decision: { kind: "dead" },
        httpStatus: 503,
        error: { kind: "retryable", status: 503 },
        result: null,
        durationMs: 5,
      }]);
    };
    expect(rows).toHaveLength(4);
    for (const r of rows.slice(0, 3)) await fail(r);
    await s.replayOnce();
    expect(await value(m.replayOutcomes, { tenant: t.id, outcome: "failed" })).toBe(3);
    expect(await value(m.replayJobs, { tenant: t.id, state: "failed" })).toBe(3);
    expect(await value(m.replayJobs, { tenant: t.id, state: "in_flight" })).toBe(1);
    expect(await value(m.replayFailureRatio, { tenant: t.id })).toBe(1);

    // The last one fails too: nothing is left, the replay completes, and its series go with it.
    await fail(rows[3]!);
    await s.replayOnce();
    expect(await value(m.replayOutcomes, { tenant: t.id, outcome: "failed" })).toBe(4);
    expect(await seriesCount(m.replaysOpen)).toBe(0);
    expect(await seriesCount(m.replayJobs)).toBe(0);
    expect(await seriesCount(m.replayFailureRatio)).toBe(0);
  });
});
