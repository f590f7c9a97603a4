import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { inTransaction, sql } from "@tick/db";
import { LAG_BUCKET_COUNT, lagBucket } from "@tick/core";
import { waitFor } from "@tick/testing";
import { createWorld, SHARDS, type World } from "./harness.js";

type Tenant = Awaited<ReturnType<World["createTenant"]>>;

interface FinishedSpec {
  queueId?: string;
  status: "succeeded" | "dead" | "cancelled" | "expired";
  count: number;
  /** The finishing attempt's start − the job's due time; null: its last attempt never started (or none). */
  lagMs: number | null;
  /** SQL for the finish instant. */
  finishedAt: string;
  dependencyKey?: string | null;
}

/**
 * Finished jobs straight into the hot tables. A job with a lag has two attempts: an earlier one (fencing
 * token 1, started an hour before its due time, so counting it would land in another bucket) and the
 * finishing one (token 2, started `lagMs` after the due time).
 */
async function finishedJobs(world: World, tenant: Tenant, spec: FinishedSpec): Promise<string[]> {
  const { rows } = await world.pool.query<{ id: string }>(
    `WITH j AS (
       INSERT INTO jobs (id, tenant_id, queue_id, shard, status, version, due_at, url, attempt_count, fencing_token, dependency_key, finished_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, $4::job_status, 5, (${spec.finishedAt}) - interval '10 minutes', 'https://93.184.216.34/x',
              CASE WHEN $6::float8 IS NULL THEN 0 ELSE 2 END, CASE WHEN $6::float8 IS NULL THEN 0 ELSE 2 END, $7, ${spec.finishedAt}, now()
         FROM generate_series(1, $5)
       RETURNING id, tenant_id, due_at, finished_at
     ), earlier AS (
       INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, started_at, finished_at)
       SELECT gen_random_uuid(), j.id, j.tenant_id, 1, 1, 1, 1, 'failed', j.due_at - interval '1 hour', j.due_at - interval '59 minutes'
         FROM j WHERE $6::float8 IS NOT NULL
     ), finishing AS (
       INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, started_at, finished_at)
       SELECT gen_random_uuid(), j.id, j.tenant_id, 2, 2, 3, 1, CASE WHEN $4 = 'succeeded' THEN 'succeeded' ELSE 'failed' END::attempt_status,
              j.due_at + make_interval(secs => $6 / 1000.0), j.finished_at
         FROM j WHERE $6::float8 IS NOT NULL
     )
     SELECT id FROM j`,
    [tenant.id, spec.queueId ?? tenant.queueId, tenant.shard, spec.status, spec.count, spec.lagMs, spec.dependencyKey ?? null],
  );
  return rows.map((r) => r.id);
}

async function addQueue(world: World, tenant: Tenant, name: string): Promise<string> {
  const { rows } = await world.pool.query<{ id: string }>(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1, $2, now()) RETURNING id`, [
    tenant.id,
    name,
  ]);
  return rows[0]!.id;
}

/** Starts every shard's rollup an hour back (as if rollups had been running), so jobs finished since are counted. */
const markEveryShard = (world: World, sqlInstant = "now() - interval '1 hour'") =>
  world.pool.query(`INSERT INTO rollup_watermarks (shard, through) SELECT s, ${sqlInstant} FROM generate_series(0, $1 - 1) s`, [SHARDS]);

interface StatRow {
  tenant_id: string;
  minute: string;
  queue_id: string;
  dependency_key: string;
  succeeded: number;
  dead: number;
  cancelled: number;
  expired: number;
  rate_limited: number;
  lag_buckets: number[];
}

/** The rollup table summed over shards, keyed for comparison. */
async function rolledUp(world: World): Promise<Record<string, Omit<StatRow, "tenant_id" | "minute" | "queue_id" | "dependency_key">>> {
  const { rows } = await world.pool.query<StatRow>(
    `SELECT tenant_id, to_char(minute AT TIME ZONE 'UTC', 'HH24:MI') AS minute, queue_id, dependency_key,
            sum(succeeded)::int AS succeeded, sum(dead)::int AS dead, sum(cancelled)::int AS cancelled, sum(expired)::int AS expired,
            sum(rate_limited)::int AS rate_limited,
            ARRAY[${Array.from({ length: LAG_BUCKET_COUNT }, (_, i) => `sum(lag_buckets[${i + 1}])::int`).join(", ")}] AS lag_buckets
       FROM job_minute_stats GROUP BY 1, 2, 3, 4`,
  );
  return Object.fromEntries(rows.map(({ tenant_id, minute, queue_id, dependency_key, ...v }) => [`${tenant_id}|${minute}|${queue_id}|${dependency_key}`, v]));
}

/**
 * The oracle: the same figures computed from every job wherever it lives (history.jobs_all), the lag
 * bucketed in JavaScript with @tick/core's lagBucket. `since`: only jobs finished at or after it.
 */
async function expectedFromJobs(world: World, since = "now() - interval '1 hour'"): Promise<Awaited<ReturnType<typeof rolledUp>>> {
  const { rows } = await world.pool.query<{ key: string; status: string; lag_ms: number | null }>(
    `SELECT j.tenant_id || '|' || to_char(date_trunc('minute', j.finished_at AT TIME ZONE 'UTC'), 'HH24:MI') || '|' || j.queue_id || '|' || COALESCE(j.dependency_key, '') AS key,
            j.status, CASE WHEN j.status IN ('succeeded', 'dead') THEN extract(epoch FROM a.started_at - j.due_at)::float8 * 1000 END AS lag_ms
       FROM history.jobs_all j LEFT JOIN history.attempts_all a ON a.job_id = j.id AND a.fencing_token = j.fencing_token
      WHERE j.finished_at IS NOT NULL AND j.finished_at >= ${since}`,
  );
  const out: Awaited<ReturnType<typeof rolledUp>> = {};
  for (const r of rows) {
    const v = (out[r.key] ??= { succeeded: 0, dead: 0, cancelled: 0, expired: 0, rate_limited: 0, lag_buckets: new Array<number>(LAG_BUCKET_COUNT).fill(0) });
    v[r.status as "succeeded"]++;
    if (r.lag_ms !== null) v.lag_buckets[lagBucket(r.lag_ms)]!++;
  }
  return out;
}

const count = async (world: World, query: string, params: unknown[] = []) => Number((await world.pool.query<{ n: string }>(query, params)).rows[0]!.n);

describe("per-minute rollups: every finished job counted once, before it leaves the hot table", () => {
  let world: World;
  beforeEach(async () => {
    world = await createWorld();
  });
  afterEach(async () => world.close());

  it("counts finished jobs per tenant, minute, queue and dependency by outcome, with the finishing attempt's lag in its bucket", async () => {
    const a = await world.createTenant();
    const b = await world.createTenant();
    const emails = await addQueue(world, a, "emails");
    await markEveryShard(world);
    // Two minutes: m and m + 1, both well before the settle margin.
    const { rows: start } = await world.pool.query<{ m: Date }>(`SELECT date_bin('1 minute', now() - interval '3 minutes', timestamptz '1970-01-01 00:00:00+00') AS m`);
    const m = `timestamptz '${start[0]!.m.toISOString()}'`; // fixed once: the inserts below must not straddle a minute change
    await finishedJobs(world, a, { status: "succeeded", count: 3, lagMs: 5, finishedAt: `${m} + interval '10 seconds'`, dependencyKey: "api.a" });
    await finishedJobs(world, a, { status: "succeeded", count: 2, lagMs: 30, finishedAt: `${m} + interval '20 seconds'`, dependencyKey: "api.a" });
    await finishedJobs(world, a, { status: "dead", count: 1, lagMs: 400_000, finishedAt: `${m} + interval '30 seconds'`, dependencyKey: "api.a" });
    await finishedJobs(world, a, { queueId: emails, status: "succeeded", count: 2, lagMs: 1_000, finishedAt: `${m} + interval '70 seconds'` });
    await finishedJobs(world, a, { queueId: emails, status: "cancelled", count: 1, lagMs: null, finishedAt: `${m} + interval '71 seconds'` });
    await finishedJobs(world, a, { queueId: emails, status: "expired", count: 1, lagMs: null, finishedAt: `${m} + interval '72 seconds'` });
    await finishedJobs(world, a, { queueId: emails, status: "rate_limited", count: 2, lagMs: null, finishedAt: `${m} + interval '73 seconds'` });
    await finishedJobs(world, b, { status: "dead", count: 4, lagMs: 100, finishedAt: `${m} + interval '15 seconds'`, dependencyKey: "api.a" });
    // Finished within the settle margin (5 s): not counted yet.
    const [recent] = await finishedJobs(world, a, { status: "succeeded", count: 1, lagMs: 7, finishedAt: "now()" });

    const scheduler = world.startScheduler("s1", { maintenance: { batch: 4, maxBatchesPerRound: 1 } });
    await scheduler.init();
    await scheduler.leaseTick();
    for (let i = 0; i < 6; i++) await scheduler.maintainOnce(); // 4 jobs per shard per round

    const minute = (offsetMin: number) =>
      world.pool
        .query<{ hm: string }>(`SELECT to_char((${m} + make_interval(mins => $1)) AT TIME ZONE 'UTC', 'HH24:MI') AS hm`, [offsetMin])
        .then((r) => r.rows[0]!.hm);
    const [m0, m1] = [await minute(0), await minute(1)];
    const buckets = (entries: Record<number, number>) => Array.from({ length: LAG_BUCKET_COUNT }, (_, i) => entries[i] ?? 0);
    expect(await rolledUp(world)).toEqual({
      // 5 ms → [0, 10); 30 ms → [25, 50); 400 s → the open bucket from 300 s.
      [`${a.id}|${m0}|${a.queueId}|api.a`]: { succeeded: 5, dead: 1, cancelled: 0, expired: 0, rate_limited: 0, lag_buckets: buckets({ 0: 3, 2: 2, 13: 1 }) },
      // 1,000 ms → [1000, 2500); cancelled, expired and rate-limited jobs have no lag. No dependency: ''.
      [`${a.id}|${m1}|${emails}|`]: { succeeded: 2, dead: 0, cancelled: 1, expired: 1, rate_limited: 2, lag_buckets: buckets({ 7: 2 }) },
      [`${b.id}|${m0}|${b.queueId}|api.a`]: { succeeded: 0, dead: 4, cancelled: 0, expired: 0, rate_limited: 0, lag_buckets: buckets({ 4: 4 }) },
    });
    const byTask = Object.fromEntries((await scheduler.metrics.maintenanceRows.get()).values.map((v) => [String(v.labels.task), v.value]));
    expect(byTask.jobs_rolled_up).toBe(16);

    // Once past the margin, the recent job is counted, in its own minute, by a later round.
    await waitFor(
      async () => {
        await scheduler.maintainOnce();
        return (await count(world, `SELECT sum(succeeded) AS n FROM job_minute_stats WHERE tenant_id = $1`, [a.id])) === 8;
      },
      { timeoutMs: 15_000, description: "the recent job counted after the settle margin" },
    );
    expect(await rolledUp(world)).toEqual(await expectedFromJobs(world));
    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE id = $1`, [recent])).toBe(1);
  });

  it("counts every job exactly once across rounds, a takeover and two schedulers rolling up at once", async () => {
    const tenants = await Promise.all(Array.from({ length: 6 }, () => world.createTenant()));
    await markEveryShard(world);
    let k = 0;
    for (const t of tenants) {
      for (const status of ["succeeded", "dead", "cancelled"] as const) {
        k++;
        await finishedJobs(world, t, {
          status,
          count: 3 + (k % 4),
          lagMs: status === "cancelled" ? null : [3, 40, 700, 12_000][k % 4]!,
          finishedAt: `now() - make_interval(secs => ${20 + k * 7})`,
          dependencyKey: k % 3 === 0 ? null : `dep-${k % 2}`,
        });
      }
    }
    const total = await count(world, `SELECT count(*) AS n FROM jobs`);

    const config = { maintenance: { batch: 2, maxBatchesPerRound: 1, archiveAfterMs: 60_000 } };
    const s1 = world.startScheduler("s1", config);
    const s2 = world.startScheduler("s2", config);
    await s1.init();
    await s2.init();
    await waitFor(
      async () => {
        await s1.leaseTick();
        await s2.leaseTick();
        return s1.heldShards().length + s2.heldShards().length === SHARDS && s1.heldShards().length > 0 && s2.heldShards().length > 0;
      },
      { timeoutMs: 10_000, description: "the two schedulers share the shards" },
    );
    // Both roll up at once, each its own shards.
    for (let i = 0; i < 2; i++) await Promise.all([s1.maintainOnce(), s2.maintainOnce()]);
    // s1 stops renewing; s2 takes its shards (epoch + 1). s1, unaware, keeps running rounds at the old epoch.
    await world.pool.query(`UPDATE shard_leases SET expires_at = now() WHERE holder = 's1'`);
    await world.pool.query(`DELETE FROM scheduler_nodes WHERE id = 's1'`);
    await waitFor(async () => (await s2.leaseTick()).length === SHARDS, { timeoutMs: 10_000, description: "s2 takes every shard" });
    for (let i = 0; i < 30; i++) await Promise.all([s1.maintainOnce(), s2.maintainOnce()]);

    const summed = await count(world, `SELECT sum(succeeded + dead + cancelled + expired) AS n FROM job_minute_stats`);
    expect(summed).toBe(total);
    expect(await rolledUp(world)).toEqual(await expectedFromJobs(world));
    expect(await count(world, `SELECT sum(stale_writes_rejected) AS n FROM shard_leases`)).toBeGreaterThan(0);

    // Two writers on one shard at once (what the fence does not serialise by itself: two transactions of
    // the same holder): the watermark lock makes the second wait and start where the first stopped.
    const t = tenants[0]!;
    // Finished just after the shard's mark (which the rounds above moved to about now() − 5 s).
    await finishedJobs(world, t, { status: "succeeded", count: 9, lagMs: 60, finishedAt: `(SELECT through FROM rollup_watermarks WHERE shard = ${t.shard}) + interval '1 millisecond'` });
    await waitFor(async () => (await count(world, `SELECT count(*) AS n FROM rollup_watermarks WHERE shard = $1 AND through < now() - interval '5 seconds'`, [t.shard])) === 1, {
      timeoutMs: 10_000,
      description: "the new jobs past the settle margin",
    });
    const roll = () =>
      inTransaction(world.pool, async (client) => sql.rollUpFinishedJobs(client, t.shard, await sql.lockRollupWatermark(client, t.shard), 1_000));
    const [x, y] = await Promise.all([roll(), roll()]);
    expect(x.jobs + y.jobs).toBe(9);
    expect(await count(world, `SELECT sum(succeeded + dead + cancelled + expired) AS n FROM job_minute_stats`)).toBe(total + 9);
    expect(await rolledUp(world)).toEqual(await expectedFromJobs(world));
  });

  it("the archiver moves a finished job only once its shard's rollup counted it", async () => {
    const t = await world.createTenant();
    // No watermark yet: nothing may move.
    const [old] = await finishedJobs(world, t, { status: "succeeded", count: 1, lagMs: 20, finishedAt: "now() - interval '10 minutes'" });
    const lock = () => inTransaction(world.pool, (client) => sql.lockArchivableJobs(client, t.shard, 60_000, 100));
    expect(await lock()).toEqual([]);
    // A mark before the job: still nothing (and the probe agrees, so no fenced pass is spent on it).
    await markEveryShard(world, "now() - interval '20 minutes'");
    expect(await lock()).toEqual([]);
    const scheduler = world.startScheduler("s1", { maintenance: { archiveAfterMs: 60_000 } });
    await scheduler.init();
    const held = await scheduler.leaseTick();
    expect((await sql.shardsToArchive(world.pool, "s1", held, 60_000)).busy.has(t.shard)).toBe(false);

    // A round counts it (its archive probe ran before, against the old mark); the next one moves it.
    await scheduler.maintainOnce();
    expect(await count(world, `SELECT sum(succeeded) AS n FROM job_minute_stats WHERE tenant_id = $1`, [t.id])).toBe(1);
    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE id = $1`, [old])).toBe(1);
    await scheduler.maintainOnce();
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE id = $1`, [old])).toBe(1);
    expect(await count(world, `SELECT sum(succeeded) AS n FROM job_minute_stats WHERE tenant_id = $1`, [t.id])).toBe(1);
    // A job finished long ago but after the mark (as if it had committed late) was counted, not lost.
    expect(await rolledUp(world)).toEqual(await expectedFromJobs(world));
  });

  it("samples each queue's figures once a minute (zeros for an empty queue) and deletes rollups and breaker openings past retention", async () => {
    const t = await world.createTenant();
    await addQueue(world, t, "idle");
    await world.insertJobs(t, 3, { dueInMs: -30_000 });
    await world.insertJobs(t, 2, { dueInMs: 3_600_000 });
    await world.pool.query(
      `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, finished_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, s::job_status, now() - interval '1 minute', 'https://93.184.216.34/x',
              CASE WHEN s = 'dead' THEN now() - interval '2 hours' END, now()
         FROM unnest(ARRAY['running', 'dispatched', 'dead', 'dead', 'dead']) s`,
      [t.id, t.queueId, t.shard],
    );
    const other = await world.createTenant();
    await world.insertJobs(other, 7, { dueInMs: -1_000 });
    // Rollup rows: 10 days old (past greatest(7, 8) days), 7.5 days old (kept), and 10 days old for a tenant keeping 30 days.
    await world.pool.query(`UPDATE tenants SET retention_days = 30 WHERE id = $1`, [other.id]);
    for (const [tenant, days] of [[t, 10], [t, 7.5], [other, 10]] as const) {
      const minute = `date_bin('1 minute', now() - make_interval(mins => ${days * 1440}), timestamptz '1970-01-01 00:00:00+00')`;
      await world.pool.query(
        `INSERT INTO job_minute_stats (shard, tenant_id, minute, queue_id, succeeded, lag_buckets) VALUES ($1, $2, ${minute}, $3, 1, '{}')`,
        [tenant.shard, tenant.id, tenant.queueId],
      );
      await world.pool.query(
        `INSERT INTO queue_minute_gauges (shard, tenant_id, minute, queue_id, due, waiting, in_flight, dead) VALUES ($1, $2, ${minute}, $3, 1, 1, 0, 0)`,
        [tenant.shard, tenant.id, tenant.queueId],
      );
      await world.pool.query(`INSERT INTO breaker_openings (dependency_key, tenant_id, opened_at) VALUES ('pay.example', $1, ${minute})`, [tenant.id]);
    }

    const scheduler = world.startScheduler("s1");
    await scheduler.init();
    await scheduler.leaseTick();
    const before = await world.pool.query<{ minute: Date }>(`SELECT date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') AS minute`);
    await scheduler.maintainOnce();
    const { rows } = await world.pool.query<{ tenant_id: string; name: string; due: number; waiting: number; in_flight: number; dead: number; oldest: number | null; minute: Date }>(
      `SELECT g.tenant_id, q.name, g.due, g.waiting, g.in_flight, g.dead, g.oldest_due_age_ms::float8 AS oldest, g.minute
         FROM queue_minute_gauges g JOIN queues q ON q.id = g.queue_id WHERE g.minute >= now() - interval '1 day' ORDER BY q.name, g.tenant_id`,
    );
    const current = rows.filter((r) => r.tenant_id === t.id);
    expect(current.map(({ oldest, minute, ...r }) => r)).toEqual([
      { tenant_id: t.id, name: "default", due: 3, waiting: 5, in_flight: 2, dead: 3 },
      { tenant_id: t.id, name: "idle", due: 0, waiting: 0, in_flight: 0, dead: 0 },
    ]);
    expect(current[0]!.oldest).toBeGreaterThanOrEqual(30_000);
    expect(current[0]!.oldest).toBeLessThan(40_000);
    expect(current[1]!.oldest).toBeNull();
    expect(current[0]!.minute.getTime()).toBeGreaterThanOrEqual(before.rows[0]!.minute.getTime());
    expect(rows.filter((r) => r.tenant_id === other.id).map((r) => [r.name, r.due])).toEqual([["default", 7]]);

    // Within the same database minute, a second round samples nothing.
    const sampled = async () =>
      Object.fromEntries((await scheduler.metrics.maintenanceRows.get()).values.map((v) => [String(v.labels.task), v.value])).gauge_rows_sampled;
    const first = await sampled();
    expect(first).toBe(3);
    const minuteNow = async () => (await world.pool.query<{ m: Date }>(`SELECT date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') AS m`)).rows[0]!.m.getTime();
    const m0 = await minuteNow();
    await scheduler.maintainOnce();
    if ((await minuteNow()) === m0) expect(await sampled()).toBe(first);

    // Retention: only the 10-day-old rows of the 7-day tenant went, from the three tables.
    const old = `SELECT count(*) AS n FROM %s WHERE minute < now() - interval '1 day' AND tenant_id = $1`;
    expect(await count(world, old.replace("%s", "job_minute_stats"), [t.id])).toBe(1);
    expect(await count(world, old.replace("%s", "queue_minute_gauges"), [t.id])).toBe(1);
    expect(await count(world, old.replace("%s", "job_minute_stats"), [other.id])).toBe(1);
    expect(await count(world, old.replace("%s", "queue_minute_gauges"), [other.id])).toBe(1);
    const oldOpenings = `SELECT count(*) AS n FROM breaker_openings WHERE opened_at < now() - interval '1 day' AND tenant_id = $1`;
    expect(await count(world, oldOpenings, [t.id])).toBe(1);
    expect(await count(world, oldOpenings, [other.id])).toBe(1);
  });
});
