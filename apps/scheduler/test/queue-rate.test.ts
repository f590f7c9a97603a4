import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sql } from "@tick/db";
import { waitFor } from "@tick/testing";
import { SHARDS, createWorld, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

/** Attempts of a queue per one-second window of the database clock (by `dispatched_at`). */
async function perSecond(queueId: string): Promise<{ second: number; n: number }[]> {
  const { rows } = await w.pool.query<{ second: string; n: number }>(
    `SELECT extract(epoch FROM date_trunc('second', a.dispatched_at))::bigint::text AS second, count(*)::int AS n
       FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.queue_id = $1 GROUP BY 1 ORDER BY 1`,
    [queueId],
  );
  return rows.map((r) => ({ second: Number(r.second), n: r.n }));
}

const addQueue = async (tenantId: string, name: string, ratePerSecond: number | null) =>
  (await w.pool.query<{ id: string }>(`INSERT INTO queues (id, tenant_id, name, rate_per_second, updated_at) VALUES (gen_random_uuid(), $1, $2, $3, now()) RETURNING id`, [tenantId, name, ratePerSecond])).rows[0]!.id;

describe("a queue's rate_per_second", () => {
  it("holds in every one-second window across shards and two schedulers, and every job goes out in the end", async () => {
    const t = await w.createTenant();
    const queueId = await addQueue(t.id, "rated", 5);
    // One tenant's jobs of one queue on every shard: each shard's holder claims them in its own transactions.
    for (let shard = 0; shard < SHARDS; shard++) await w.insertJobs({ ...t, queueId, shard }, 15, { dueInMs: -60_000 });
    const a = w.startScheduler("a", { dispatchIntervalMs: 20, leaseRenewIntervalMs: 200 });
    const b = w.startScheduler("b", { dispatchIntervalMs: 20, leaseRenewIntervalMs: 200 });
    // Split the shards first (as leases-and-fencing.test.ts does), then run both for real.
    await a.init();
    await a.leaseTick();
    await b.leaseTick();
    await a.leaseTick();
    await b.leaseTick();
    expect(a.heldShards()).toHaveLength(SHARDS / 2);
    expect(b.heldShards()).toHaveLength(SHARDS / 2);
    await Promise.all([a.start(), b.start()]);
    await waitFor(async () => (await perSecond(queueId)).reduce((sum, w) => sum + w.n, 0) === 60, { timeoutMs: 40_000, description: "all 60 dispatched" });
    await Promise.all([a.pause(), b.pause()]);
    expect(a.heldShards().length + b.heldShards().length).toBe(SHARDS);
    expect(a.heldShards().length).toBeGreaterThan(0);
    expect(b.heldShards().length).toBeGreaterThan(0);

    const windows = await perSecond(queueId);
    expect(windows.filter((x) => x.n > 5)).toEqual([]);
    expect(windows.length).toBeGreaterThanOrEqual(12);
    // Both schedulers' shards went out (each holds two of the four the jobs are on).
    const byShard = await w.pool.query<{ shard: number; n: number }>(
      `SELECT j.shard, count(*)::int AS n FROM jobs j JOIN attempts a ON a.job_id = j.id WHERE j.queue_id = $1 GROUP BY j.shard ORDER BY j.shard`,
      [queueId],
    );
    expect(byShard.rows).toEqual([0, 1, 2, 3].map((shard) => ({ shard, n: 15 })));
  }, 60_000);

  it("does not slow the tenant's unrated queue, even behind an older rated backlog", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    const rated = await addQueue(t.id, "rated", 1);
    await w.insertJobs({ ...t, queueId: rated }, 2_000, { dueInMs: -3_600_000 });
    await w.insertJobs(t, 300, { dueInMs: -1_000 }); // the default queue: no rate
    // One round (batch 500) takes every unrated job and one of the rated queue.
    await s.dispatchOnce();
    const counts = await w.pool.query<{ queue_id: string; n: number }>(`SELECT queue_id, count(*)::int AS n FROM jobs WHERE status = 'dispatched' GROUP BY queue_id`);
    const got = new Map(counts.rows.map((r) => [r.queue_id, r.n]));
    expect(got.get(t.queueId)).toBe(300);
    expect(got.get(rated)).toBe(1);
  });

  it("the claim without rate windows (a tenant with no rate-limited queue) never takes from a rated queue; the dispatcher picks it per tenant", async () => {
    const t = await w.createTenant();
    const plain = await w.createTenant();
    const rated = await addQueue(t.id, "rated", 1);
    const pausedRated = await addQueue(plain.id, "paused-rated", 1);
    await w.pool.query(`UPDATE queues SET paused = true WHERE id = $1`, [pausedRated]);
    expect((await sql.roundFacts(w.pool, t.shard, [t.id, plain.id])).rated).toEqual(new Set([t.id]));
    expect((await sql.roundFacts(w.pool, t.shard, [])).rated).toEqual(new Set());

    await w.insertJobs({ ...t, queueId: rated }, 20, { dueInMs: -60_000 });
    await w.insertJobs(t, 5, { dueInMs: -1_000 });
    // Told (wrongly) that the tenant has no rated queue: only the unrated queue's 5 go, none of the rated 20.
    const unratedOnly = await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 50, rated: false });
    expect(unratedOnly).toHaveLength(5);
    expect(new Set(unratedOnly.map((c) => c.queue_id))).toEqual(new Set([t.queueId]));
    // The round's facts count them as queued for the broker (dispatched, not started), by tenant.
    const facts = await sql.roundFacts(w.pool, t.shard, [t.id]);
    expect(facts.queued.total).toBe(5);
    expect(facts.queued.byTenant).toEqual(new Map([[t.id, 5]]));
    // The full claim takes the rated queue's one for this second and advances its window.
    const full = await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 50 });
    expect(full.map((c) => c.queue_id)).toEqual([rated]);
    expect((await w.pool.query(`SELECT rate_window_count FROM queues WHERE id = $1`, [rated])).rows[0]).toEqual({ rate_window_count: 1 });
  });

  it("a fractional rate carries its allowance from second to second: 0.5/s is one claim in every other second", async () => {
    const t = await w.createTenant();
    const queueId = await addQueue(t.id, "slow", 0.5);
    await w.insertJobs({ ...t, queueId }, 20, { dueInMs: -1_000 });
    const started = Date.now();
    while (Date.now() - started < 4_300) {
      await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 10 });
      await new Promise((r) => setTimeout(r, 50));
    }
    const windows = await perSecond(queueId);
    // Window s may take floor(0.5·(s+1)) − floor(0.5·s): one in odd seconds, none in even ones.
    expect(windows.length).toBeGreaterThanOrEqual(2);
    for (const x of windows) expect(x).toEqual({ second: x.second, n: 1 });
    for (const x of windows) expect(x.second % 2).toBe(1);
  });

  it("a claim whose now() is in an earlier second than the queue's window takes nothing and leaves the window where it is", async () => {
    const t = await w.createTenant();
    const queueId = await addQueue(t.id, "rated", 100);
    await w.insertJobs({ ...t, queueId }, 5, { dueInMs: -1_000 });
    await w.pool.query(`UPDATE queues SET rate_window_start = date_trunc('second', now()) + interval '10 seconds', rate_window_count = 3 WHERE id = $1`, [queueId]);
    expect(await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 10 })).toHaveLength(0);
    const after = await w.pool.query<{ later: boolean; rate_window_count: number }>(
      `SELECT rate_window_start > now() + interval '8 seconds' AS later, rate_window_count FROM queues WHERE id = $1`,
      [queueId],
    );
    expect(after.rows[0]).toEqual({ later: true, rate_window_count: 3 });
    // Back in the present, the window moves forward and counts this claim.
    await w.pool.query(`UPDATE queues SET rate_window_start = date_trunc('second', now()) - interval '1 second', rate_window_count = 100 WHERE id = $1`, [queueId]);
    expect(await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 10 })).toHaveLength(5);
    const moved = await w.pool.query<{ current: boolean; rate_window_count: number }>(
      `SELECT rate_window_start = date_trunc('second', (SELECT max(dispatched_at) FROM attempts)) AS current, rate_window_count FROM queues WHERE id = $1`,
      [queueId],
    );
    expect(moved.rows[0]).toEqual({ current: true, rate_window_count: 5 });
  });
});
