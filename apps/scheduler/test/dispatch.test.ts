import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import { sql } from "@tick/db";
import { createWorld, statusCounts, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

/**
 * A running scheduler whose shard's broker queue (25 at most) is full of the tenant's 100 due jobs, and how many of
 * its rounds so far found it full.
 */
async function fillBrokerQueue() {
  const s = w.startScheduler("s", { maxQueuedPerShard: 25, dispatchBusyIntervalMs: 5 });
  const t = await w.createTenant();
  await w.insertJobs(t, 100, { dueInMs: -1_000 });
  const fullRounds = async () => (await s.metrics.dispatchThrottled.get()).values.filter((v) => v.labels.reason === "queue_full").reduce((n, v) => n + v.value, 0);
  await s.start();
  await waitFor(async () => (await statusCounts(w.pool)).dispatched === 25, { timeoutMs: 10_000, description: "the queue filled" });
  return { s, fullRounds };
}

describe("dispatch", () => {
  it("claims due jobs only, into a pending attempt with the next fencing token, and publishes them once the claim commits, in chunks that carry each attempt ID (no outbox row)", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 20);
    await w.insertJobs(t, 5, { dueInMs: 3_600_000 });
    expect(await s.dispatchOnce()).toBe(20);
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 20, scheduled: 5 });

    const { rows } = await w.pool.query<{ job_version: number; fencing_token: string; number: number; status: string; version: number; current: string; id: string }>(
      `SELECT a.id, a.job_version, a.fencing_token::text, a.number, a.status, j.version, j.current_attempt_id AS current
         FROM attempts a JOIN jobs j ON j.id = a.job_id`,
    );
    expect(rows).toHaveLength(20);
    for (const r of rows) expect(r).toMatchObject({ job_version: 2, fencing_token: "1", number: 1, status: "pending", version: 2, current: r.id });

    // Published by the dispatch round itself: no outbox row, nothing left for the relay.
    const outbox = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox`);
    expect(outbox.rows[0]!.n).toBe(0);
    expect(await s.relayOnce()).toBe(0);
    const messages = await w.attemptsQueue.getJobs(["waiting", "prioritized", "delayed"]);
    const carried = messages.flatMap((m) => (m.data as { attempts: { attemptId: string }[] }).attempts);
    expect(carried.map((a) => a.attemptId).sort()).toEqual(rows.map((r) => r.id).sort());
    expect(carried[0]).toMatchObject({ version: 2, fencingToken: "1", tenantId: t.id });
    // Each attempt records the message that carries it, so the reaper can ask the broker about it.
    const recorded = await w.pool.query<{ id: string; message_id: string }>(`SELECT id, message_id FROM attempts`);
    for (const r of recorded.rows) {
      const message = messages.find((m) => m.id === `c-${r.message_id}`);
      expect((message?.data as { attempts: { attemptId: string }[] }).attempts.map((a) => a.attemptId)).toContain(r.id);
    }
  });

  it("skips paused queues, honours queue concurrency and the tenant's in-flight cap, and takes higher priority first", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant({ maxInFlight: 7 });
    await w.pool.query(`UPDATE queues SET concurrency = 3 WHERE id = $1`, [t.queueId]);
    const { rows } = await w.pool.query<{ id: string }>(`INSERT INTO queues (id, tenant_id, name, paused, updated_at) VALUES (gen_random_uuid(), $1, 'paused', true, now()) RETURNING id`, [t.id]);
    await w.insertJobs(t, 10, { priority: 0 });
    await w.insertJobs(t, 2, { priority: 10 });
    await w.insertJobs({ ...t, queueId: rows[0]!.id }, 10);
    expect(await s.dispatchOnce()).toBe(3);
    const claimed = await w.pool.query<{ priority: number }>(`SELECT priority FROM jobs WHERE status = 'dispatched' ORDER BY priority DESC`);
    expect(claimed.rows.map((r) => r.priority)).toEqual([10, 10, 0]);

    // Lift the queue cap: the tenant cap (7 in flight) now binds; the paused queue still waits.
    await w.pool.query(`UPDATE queues SET concurrency = NULL WHERE id = $1`, [t.queueId]);
    await s.dispatchOnce();
    expect((await statusCounts(w.pool)).dispatched).toBe(7);
    const paused = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_id = $1 AND status = 'scheduled'`, [rows[0]!.id]);
    expect(paused.rows[0]!.n).toBe(10);
  });

  it("a suspended tenant's due jobs wait, scheduled, while others dispatch; resumed, they go out", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const suspended = await w.createTenant();
    const other = await w.createTenant();
    await w.pool.query(`UPDATE tenants SET suspended_at = now() WHERE id = $1`, [suspended.id]);
    await w.insertJobs(suspended, 5);
    await w.insertJobs(other, 4);
    expect(await s.dispatchOnce()).toBe(4);
    const waiting = await w.pool.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM jobs WHERE tenant_id = $1 GROUP BY status`, [suspended.id]);
    expect(waiting.rows).toEqual([{ status: "scheduled", n: 5 }]);
    expect(await s.dispatchOnce()).toBe(0); // still nothing of it, round after round
    await w.pool.query(`UPDATE tenants SET suspended_at = NULL WHERE id = $1`, [suspended.id]);
    expect(await s.dispatchOnce()).toBe(5);
    expect((await statusCounts(w.pool)).dispatched).toBe(9);
  });

  it("a quiet tenant's due job goes out in the same round as a noisy tenant's 20,000-job burst", async () => {
    const s = w.startScheduler("s", { dispatchBatch: 200 });
    await s.init();
    await s.leaseTick();
    const noisy = await w.createTenant();
    const quiet = await w.createTenant();
    await w.insertJobs(noisy, 20_000);
    for (let round = 0; round < 5; round++) {
      await w.insertJobs(quiet, 1);
      await s.dueIndex.noteDue(quiet.shard, quiet.id, Date.now()); // as the API does after its commit
      await s.dispatchOnce();
      const waiting = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND status = 'scheduled'`, [quiet.id]);
      expect(waiting.rows[0]!.n).toBe(0);
    }
    const noisyLeft = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND status = 'scheduled'`, [noisy.id]);
    expect(noisyLeft.rows[0]!.n).toBeGreaterThan(15_000);
  });

  it("shares capacity by weight between saturated tenants", async () => {
    const s = w.startScheduler("s", { dispatchBatch: 100 });
    await s.init();
    await s.leaseTick();
    // Put both tenants on the same shard so they compete for the same rounds.
    const heavy = await w.createTenant({ weight: 3 });
    let light = await w.createTenant({ weight: 1 });
    while (light.shard !== heavy.shard) light = await w.createTenant({ weight: 1 });
    await w.insertJobs(heavy, 2_000);
    await w.insertJobs(light, 2_000);
    for (let i = 0; i < 10; i++) await s.dispatchOnce();
    const { rows } = await w.pool.query<{ tenant_id: string; n: number }>(`SELECT tenant_id, count(*)::int AS n FROM jobs WHERE status = 'dispatched' GROUP BY tenant_id`);
    const got = new Map(rows.map((r) => [r.tenant_id, r.n]));
    expect(got.get(heavy.id)! + got.get(light.id)!).toBe(1_000);
    expect(got.get(heavy.id)! / got.get(light.id)!).toBeCloseTo(3, 0);
  });

  it("keeps the broker queue shallow: no more than the per-shard limit waits unstarted", async () => {
    const s = w.startScheduler("s", { maxQueuedPerShard: 25 });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 100);
    await s.dispatchOnce();
    await s.dispatchOnce();
    expect((await statusCounts(w.pool)).dispatched).toBe(25);
  });

  it("looks at a shard whose broker queue is full less and less often while no worker is alive, and fills it again once something takes from it", async () => {
    const { s, fullRounds } = await fillBrokerQueue();
    const before = await fullRounds();
    await new Promise((r) => setTimeout(r, 1_500));
    // Every 5 ms this would be about 300 rounds; doubling from 5 ms to 250 ms, about a dozen.
    const rounds = (await fullRounds()) - before;
    expect(rounds).toBeGreaterThanOrEqual(3);
    expect(rounds).toBeLessThanOrEqual(20);
    // Ten leave the broker's backlog (cancelled here; a worker's starts do the same): the shard fills up again within the longest wait.
    await w.pool.query(
      `WITH gone AS (
         UPDATE jobs SET status = 'cancelled', finished_at = now(), current_attempt_id = NULL, version = version + 1
          WHERE id IN (SELECT id FROM jobs WHERE status = 'dispatched' LIMIT 10) RETURNING id)
       UPDATE attempts SET status = 'discarded' WHERE job_id IN (SELECT id FROM gone)`,
    );
    await waitFor(async () => (await statusCounts(w.pool)).dispatched === 25, { timeoutMs: 2_000, description: "the queue filled again" });
    await s.pause();
  });

  it("keeps looking at a full broker queue every busy interval while a worker is alive to take from it", async () => {
    await w.pool.query(
      `INSERT INTO worker_nodes (id, started_at, heartbeat_at, expires_at) VALUES ('worker-1', now(), now(), now() + interval '1 minute')`,
    );
    const { s, fullRounds } = await fillBrokerQueue();
    const before = await fullRounds();
    await new Promise((r) => setTimeout(r, 1_000));
    // A round every 5 ms (about 200 in a second; fewer on a busy machine), not a dozen.
    expect((await fullRounds()) - before).toBeGreaterThan(40);
    await s.pause();
  });

  it("releases 5,000 overdue jobs after downtime no faster than the configured rate", async () => {
    const rate = 1_000;
    const t = await w.createTenant();
    await w.insertJobs(t, 5_000, { dueInMs: -3_600_000 });
    const s = w.startScheduler("s", { dispatchRatePerSecond: rate, dispatchIntervalMs: 20 });
    const started = Date.now();
    await s.start();
    await waitFor(async () => (await statusCounts(w.pool)).dispatched === 5_000, { timeoutMs: 60_000, description: "all 5,000 released" });
    await s.pause();
    const { rows } = await w.pool.query<{ ms: string }>(`SELECT (extract(epoch FROM dispatched_at) * 1000)::bigint::text AS ms FROM attempts ORDER BY dispatched_at`);
    const times = rows.map((r) => Number(r.ms));
    const first = times[0]!;
    // Token bucket: at most one second's worth at once, then `rate` per second.
    for (let i = 0; i < times.length; i += 250) {
      const elapsed = (times[i]! - first) / 1000;
      expect(i + 1).toBeLessThanOrEqual(rate * (elapsed + 1) + 1);
    }
    expect((Date.now() - started) / 1000).toBeGreaterThanOrEqual(5_000 / rate - 1 - 0.5);
  });

  it("expires jobs past their deadline instead of dispatching them", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 3, { dueInMs: -60_000, expiresInMs: -1_000 });
    await w.insertJobs(t, 2, { dueInMs: -60_000, expiresInMs: 3_600_000 });
    expect(await s.dispatchOnce()).toBe(2);
    const results = await s.reapOnce();
    expect(results.reduce((sum, r) => sum + r.expired, 0)).toBe(3);
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 2, expired: 3 });
  });

  it("the expiry sweep of a shard reads its jobs with a deadline, not its backlog, in a table never analyzed", async () => {
    const t = await w.createTenant();
    // A backlog of 50,000 without deadlines in a table never analyzed (autovacuum off, or not round yet).
    await w.insertJobs(t, 50_000, { dueInMs: -1_000 });
    await w.insertJobs(t, 2, { dueInMs: 3_600_000, expiresInMs: -1_000 });
    await w.insertJobs(t, 2, { dueInMs: 3_600_000, expiresInMs: 3_600_000 });
    const client = await w.pool.connect();
    try {
      const sweep = async () => {
        await client.query("SELECT pg_stat_force_next_flush()");
        await client.query("BEGIN");
        const expired = await sql.expireOverdueJobs(client, t.shard, 100);
        const { rows } = await client.query<{ seq_scan: string; idx_tup_fetch: string }>(
          `SELECT seq_scan, idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relid = 'jobs'::regclass`,
        );
        await client.query("COMMIT");
        return { expired: expired.length, seqScans: Number(rows[0]!.seq_scan), fetched: Number(rows[0]!.idx_tup_fetch) };
      };
      const first = await sweep();
      expect(first.expired).toBe(2);
      expect(first.seqScans).toBe(0);
      expect(first.fetched).toBeLessThan(100);
      const second = await sweep();
      expect(second).toEqual({ expired: 0, seqScans: 0, fetched: 0 });
    } finally {
      client.release();
    }
    expect(await statusCounts(w.pool)).toEqual({ scheduled: 50_002, expired: 2 });
  });
});
