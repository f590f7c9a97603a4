import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { Registry } from "prom-client";
import { sql } from "@tick/db";
import { createLogger } from "@tick/runtime";
import { Maintenance } from "../src/maintenance/maintenance.js";
import { createSchedulerMetrics } from "../src/metrics.js";
import { createWorld, SHARDS, type World } from "./harness.js";

type Tenant = Awaited<ReturnType<World["createTenant"]>>;

/** Jobs of `tenant` in `status`, finished `agoMs` before the database's now, each with one attempt. */
async function finishedJobs(world: World, tenant: Tenant, count: number, status: string, agoMs: number): Promise<string[]> {
  const { rows } = await world.pool.query<{ id: string }>(
    `WITH j AS (
       INSERT INTO jobs (id, tenant_id, queue_id, shard, status, version, due_at, url, attempt_count, fencing_token, finished_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, $4::job_status, 3, now() - make_interval(secs => $6 / 1000.0 + 1), 'https://93.184.216.34/x', 1, 1,
              now() - make_interval(secs => $6 / 1000.0), now()
         FROM generate_series(1, $5)
       RETURNING id, tenant_id
     ), a AS (
       INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, finished_at)
       SELECT gen_random_uuid(), j.id, j.tenant_id, 1, 1, 2, 1, CASE WHEN $4 = 'succeeded' THEN 'succeeded' ELSE 'failed' END::attempt_status, now()
         FROM j
     )
     SELECT id FROM j`,
    [tenant.id, tenant.queueId, tenant.shard, status, count, agoMs],
  );
  return rows.map((r) => r.id);
}

const count = async (world: World, query: string, params: unknown[] = []) => Number((await world.pool.query<{ n: string }>(query, params)).rows[0]!.n);

describe("data lifecycle: hot tables hold live work, history is pruned in bounded batches", () => {
  let world: World;
  beforeEach(async () => {
    world = await createWorld();
  });
  afterEach(async () => world.close());

  it("moves finished jobs and their attempts to history in bounded batches; live, recent and DLQ jobs stay", async () => {
    const tenant = await world.createTenant();
    const old = await finishedJobs(world, tenant, 30, "succeeded", 120_000);
    const recent = await finishedJobs(world, tenant, 5, "succeeded", 5_000);
    const dead = await finishedJobs(world, tenant, 4, "dead", 120_000);
    await world.insertJobs(tenant, 6, { dueInMs: 3_600_000 });
    const scheduler = world.startScheduler("s1", { maintenance: { archiveAfterMs: 60_000, batch: 7, maxBatchesPerRound: 2 } });
    await scheduler.init();
    await scheduler.leaseTick();
    expect(scheduler.heldShards()).toHaveLength(SHARDS);
    // The archiver moves only jobs the per-minute rollup has counted: as if rollups had run up to now.
    await world.pool.query(`INSERT INTO rollup_watermarks (shard, through) SELECT s, now() FROM generate_series(0, $1 - 1) s`, [SHARDS]);

    // One round moves at most batch × maxBatchesPerRound jobs of a shard.
    await scheduler.maintainOnce();
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs`)).toBe(14);
    for (let i = 0; i < 3; i++) await scheduler.maintainOnce();

    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[])`, [old])).toBe(0);
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE id = ANY($1::uuid[])`, [old])).toBe(30);
    expect(await count(world, `SELECT count(*) AS n FROM attempts WHERE job_id = ANY($1::uuid[])`, [old])).toBe(0);
    expect(await count(world, `SELECT count(*) AS n FROM history.attempts WHERE job_id = ANY($1::uuid[])`, [old])).toBe(30);
    // Finished within the archive delay, dead and waiting in the DLQ, or not finished: still in the hot table.
    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[])`, [[...recent, ...dead]])).toBe(9);
    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE status = 'scheduled'`)).toBe(6);
    // Readers see every job exactly once, wherever it lives.
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs_all WHERE tenant_id = $1`, [tenant.id])).toBe(45);
    const moved = await sql.findJob(world.pool, tenant.id, old[0]!);
    expect(moved).toMatchObject({ id: old[0], status: "succeeded", queue_name: "default" });
    expect(await sql.listAttempts(world.pool, tenant.id, old[0]!)).toHaveLength(1);
    const page = await sql.listJobs(world.pool, tenant.id, { limit: 100 });
    expect(new Set(page.map((j) => j.id)).size).toBe(45);
    expect(await sql.findJob(world.pool, "00000000-0000-0000-0000-000000000000", old[0]!)).toBeNull();

    // Dead jobs leave once past the tenant's DLQ retention (30 days), into history, where the tenant's
    // retention (here 60 days) then applies to them like to any finished job.
    await world.pool.query(`UPDATE tenants SET retention_days = 60 WHERE id = $1`, [tenant.id]);
    await world.pool.query(`UPDATE jobs SET finished_at = now() - interval '31 days' WHERE id = ANY($1::uuid[])`, [dead]);
    await scheduler.maintainOnce();
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE id = ANY($1::uuid[]) AND status = 'dead'`, [dead])).toBe(4);
    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[])`, [dead])).toBe(0);
  });

  it("folds each tenant's live-job counts (the pending-job quota's) to one row a round, keeping their sums", async () => {
    const [one, two] = [await world.createTenant(), await world.createTenant()];
    for (let i = 0; i < 4; i++) await world.insertJobs(one, 3, { dueInMs: 3_600_000 });
    await world.insertJobs(two, 2, { dueInMs: 3_600_000 });
    await world.insertJobs(two, 2, { dueInMs: 3_600_000 });
    await world.pool.query(`UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id IN (SELECT id FROM jobs WHERE tenant_id = $1 LIMIT 5)`, [one.id]);
    const rows = (t: Tenant) => count(world, `SELECT count(*) AS n FROM tenant_live_job_counts WHERE tenant_id = $1`, [t.id]);
    expect(await rows(one)).toBe(5);
    const scheduler = world.startScheduler("s1", { maintenance: { archiveAfterMs: 3_600_000 } });
    await scheduler.init();
    await scheduler.leaseTick();
    await scheduler.maintainOnce();
    expect([await rows(one), await rows(two)]).toEqual([1, 1]);
    expect((await sql.countPendingJobs(world.pool, one)).pending).toBe(7);
    expect((await sql.countPendingJobs(world.pool, two)).pending).toBe(4);
  });

  it("keeps a job an unsettled DLQ replay still watches", async () => {
    const tenant = await world.createTenant();
    const [watched] = await finishedJobs(world, tenant, 1, "succeeded", 120_000);
    const { rows } = await world.pool.query<{ id: string }>(
      `INSERT INTO dlq_replays (id, tenant_id, actor, filter, rate_per_second, shard, total, updated_at)
       VALUES (gen_random_uuid(), $1, 'user:test', '{}', 10, $2, 1, now()) RETURNING id`,
      [tenant.id, tenant.shard],
    );
    await world.pool.query(`INSERT INTO dlq_replay_items (replay_id, job_id, priority, dead_at, released_at) VALUES ($1, $2, 0, now(), now())`, [rows[0]!.id, watched]);
    const scheduler = world.startScheduler("s1", { maintenance: { archiveAfterMs: 60_000 } });
    await scheduler.init();
    await scheduler.leaseTick();
    await scheduler.maintainOnce();
    expect(await count(world, `SELECT count(*) AS n FROM jobs WHERE id = $1`, [watched])).toBe(1);
    await world.pool.query(`UPDATE dlq_replay_items SET outcome = 'succeeded', settled_at = now() WHERE job_id = $1`, [watched]);
    await scheduler.maintainOnce();
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE id = $1`, [watched])).toBe(1);
    // The settled item outlives the move (no foreign key to the hot table).
    expect(await count(world, `SELECT count(*) AS n FROM dlq_replay_items WHERE job_id = $1`, [watched])).toBe(1);
  });

  it("refuses to move anything with a stale shard lease (fenced like every scheduler write)", async () => {
    const tenant = await world.createTenant();
    await finishedJobs(world, tenant, 3, "succeeded", 120_000);
    const first = world.startScheduler("s1", { maintenance: { archiveAfterMs: 60_000 } });
    await first.init();
    await first.leaseTick();
    const stale = first.heldShards().find((l) => l.shard === tenant.shard)!;
    await world.pool.query(`UPDATE shard_leases SET holder = 's2', epoch = epoch + 1 WHERE shard = $1`, [tenant.shard]);
    const metrics = createSchedulerMetrics(new Registry());
    const maintenance = new Maintenance(
      world.pool,
      { holder: "s1", archiveAfterMs: 60_000, batch: 100, maxBatchesPerRound: 1, retentionMaxDays: 90, outboxKeepMs: 60_000, partitionsAheadDays: 1, pruneBudgetMs: 100 },
      createLogger({ name: "t", level: "silent", destination: new PassThrough() }),
      metrics,
    );
    expect(await maintenance.archiveShard(stale)).toMatchObject({ refused: true, archivedJobs: 0 });
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs`)).toBe(0);
    expect(await count(world, `SELECT stale_writes_rejected AS n FROM shard_leases WHERE shard = $1`, [tenant.shard])).toBe(1);
  });

  it("deletes history past each tenant's retention in bounded batches, keeps keys inside their window, drops whole partitions past the ceiling", async () => {
    const short = await world.createTenant();
    const long = await world.createTenant();
    await world.pool.query(`UPDATE tenants SET retention_days = 3 WHERE id = $1`, [short.id]);
    await world.pool.query(`UPDATE tenants SET retention_days = 30 WHERE id = $1`, [long.id]);
    // Finished 10 days ago: past the short tenant's retention, inside the long one's.
    for (const t of [short, long]) await finishedJobs(world, t, 25, "succeeded", 10 * 86_400_000);
    const [held] = await finishedJobs(world, short, 1, "succeeded", 10 * 86_400_000);
    await world.pool.query(`UPDATE jobs SET idempotency_key = 'k', idempotency_expires_at = now() + interval '1 hour' WHERE id = $1`, [held]);
    // Finished 120 days ago: past the deployment's ceiling (90 days), whatever the tenant says.
    await finishedJobs(world, long, 5, "succeeded", 120 * 86_400_000);

    const scheduler = world.startScheduler("s1", { maintenance: { archiveAfterMs: 60_000, batch: 10, maxBatchesPerRound: 1, retentionMaxDays: 90 } });
    await scheduler.init();
    await scheduler.leaseTick();
    for (let i = 0; i < 15; i++) await scheduler.maintainOnce(); // moves everything (10 per shard per round), then prunes
    expect(await count(world, `SELECT count(*) AS n FROM jobs`)).toBe(0);

    // The partitions past the ceiling went whole; the short tenant's history went 10 jobs a statement.
    const parts = (await world.pool.query<{ relname: string }>(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'history.jobs'::regclass`)).rows.map((r) => r.relname);
    const dayOf = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().slice(0, 10).replaceAll("-", "");
    expect(parts).not.toContain(`jobs_p${dayOf(120 * 86_400_000)}`);
    expect(parts).toContain(`jobs_p${dayOf(10 * 86_400_000)}`);
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE tenant_id = $1`, [long.id])).toBe(25);
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE tenant_id = $1`, [short.id])).toBe(1);
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE id = $1`, [held])).toBe(1);
    expect(await count(world, `SELECT count(*) AS n FROM history.attempts a JOIN tenants t ON t.id = a.tenant_id WHERE t.id = $1`, [short.id])).toBe(1);

    // One statement never deletes more than the batch.
    const more = await world.createTenant();
    await world.pool.query(`UPDATE tenants SET retention_days = 1 WHERE id = $1`, [more.id]);
    await world.pool.query(`SELECT history.ensure_partitions(((now() - interval '5 days') AT TIME ZONE 'UTC')::date, 1)`);
    await world.pool.query(
      `INSERT INTO history.jobs (id, tenant_id, queue_id, shard, status, due_at, url, created_at, updated_at, finished_at)
       SELECT gen_random_uuid(), $1, $2, $3, 'succeeded', now() - interval '5 days', 'https://93.184.216.34/x', now() - interval '5 days', now(), now() - interval '5 days'
         FROM generate_series(1, 35)`,
      [more.id, more.queueId, more.shard],
    );
    expect(await sql.pruneHistoryOfShard(world.pool, more.shard, 90, 10)).toMatchObject({ jobs: 10 });
    expect(await count(world, `SELECT count(*) AS n FROM history.jobs WHERE tenant_id = $1`, [more.id])).toBe(25);
  });

  it("deletes expired history within a time budget per round, so retention yields to dispatch", async () => {
    const t = await world.createTenant();
    await world.pool.query(`UPDATE tenants SET retention_days = 1 WHERE id = $1`, [t.id]);
    await world.pool.query(`SELECT history.ensure_partitions(((now() AT TIME ZONE 'UTC')::date - 5), 1)`);
    await world.pool.query(
      `INSERT INTO history.jobs (id, tenant_id, queue_id, shard, status, due_at, url, created_at, updated_at, finished_at)
       SELECT gen_random_uuid(), $1, $2, $3, 'succeeded', f, 'https://93.184.216.34/x', f, f, f
         FROM (SELECT now() - interval '5 days' AS f FROM generate_series(1, 30)) x`,
      [t.id, t.queueId, t.shard],
    );
    const left = () => count(world, `SELECT count(*) AS n FROM history.jobs WHERE tenant_id = $1`, [t.id]);
    // A budget already spent: nothing is deleted this round.
    const none = world.startScheduler("s1", { maintenance: { batch: 10, maxBatchesPerRound: 10, pruneBudgetMs: 0 } });
    await none.init();
    await none.leaseTick();
    await none.maintainOnce();
    expect(await left()).toBe(30);
    // A budget smaller than one batch takes: exactly one batch per round, whatever maxBatchesPerRound allows.
    const maintenance = new Maintenance(
      world.pool,
      { holder: "s1", archiveAfterMs: 60_000, batch: 10, maxBatchesPerRound: 10, retentionMaxDays: 90, outboxKeepMs: 60_000, partitionsAheadDays: 1, pruneBudgetMs: 0.001 },
      createLogger({ name: "t", level: "silent", destination: new PassThrough() }),
      createSchedulerMetrics(new Registry()),
    );
    const lease = none.heldShards().find((l) => l.shard === t.shard)!;
    expect(await maintenance.pruneShard(lease, { remainingMs: 0.001 })).toEqual({ prunedJobs: 10, refused: false });
    expect(await left()).toBe(20);
    // With time to spare it goes on, batch after batch.
    expect(await maintenance.pruneShard(lease, { remainingMs: 60_000 })).toEqual({ prunedJobs: 20, refused: false });
    expect(await left()).toBe(0);
  });

  it("with export before delete, retention deletes only history a complete export covered", async () => {
    const t = await world.createTenant();
    await world.pool.query(`UPDATE tenants SET retention_days = 3, export_before_prune = true WHERE id = $1`, [t.id]);
    await world.pool.query(`SELECT history.ensure_partitions(((now() AT TIME ZONE 'UTC')::date - 20), 21)`);
    const insert = (days: number, n: number) =>
      world.pool.query(
        `INSERT INTO history.jobs (id, tenant_id, queue_id, shard, status, due_at, url, created_at, updated_at, finished_at)
         SELECT gen_random_uuid(), $1, $2, $3, 'succeeded', f, 'https://93.184.216.34/x', f, f, f
           FROM (SELECT now() - make_interval(days => $4) AS f FROM generate_series(1, $5)) x`,
        [t.id, t.queueId, t.shard, days, n],
      );
    await insert(15, 4);
    await insert(10, 6);
    const left = () => count(world, `SELECT count(*) AS n FROM history.jobs WHERE tenant_id = $1`, [t.id]);
    // Never exported: nothing goes, however old.
    expect(await sql.pruneHistoryOfShard(world.pool, t.shard, 90, 100)).toMatchObject({ jobs: 0 });
    // Exported through 12 days ago: the 15-day-old jobs go, the 10-day-old ones wait for the next export.
    await world.pool.query(`UPDATE tenants SET exported_through = now() - interval '12 days' WHERE id = $1`, [t.id]);
    expect(await sql.pruneHistoryOfShard(world.pool, t.shard, 90, 100)).toMatchObject({ jobs: 4 });
    expect(await left()).toBe(6);
    // A complete export from the mark moves it up; then they go too.
    expect((await sql.recordCompleteExport(world.pool, t.id, new Date(Date.now() - 13 * 86_400_000), new Date(Date.now() - 5 * 86_400_000)))!.getTime()).toBeLessThan(Date.now() - 4 * 86_400_000);
    expect(await sql.pruneHistoryOfShard(world.pool, t.shard, 90, 100)).toMatchObject({ jobs: 6 });
    expect(await left()).toBe(0);
  });

  it("releases expired idempotency keys and deletes published outbox rows and old deliveries in batches", async () => {
    const tenant = await world.createTenant();
    await world.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, job_id, expires_at)
       SELECT $1::uuid, 'old-' || i, gen_random_uuid(), now() - interval '1 second' FROM generate_series(1, 12) i
       UNION ALL SELECT $1::uuid, 'live', gen_random_uuid(), now() + interval '1 hour'`,
      [tenant.id],
    );
    await world.pool.query(
      `INSERT INTO outbox (kind, shard, tenant_id, payload, published_at)
       SELECT 'dispatch', $2, $1, '{}', CASE WHEN i <= 12 THEN now() - interval '10 minutes' WHEN i <= 14 THEN now() END FROM generate_series(1, 16) i`,
      [tenant.id, tenant.shard],
    );
    await world.pool.query(
      `INSERT INTO webhook_deliveries (id, tenant_id, job_id, event, url, payload, status, created_at)
       SELECT gen_random_uuid(), $1, gen_random_uuid(), 'job.succeeded', 'https://93.184.216.34/h', '{}',
              CASE WHEN i <= 3 THEN 'pending' ELSE 'delivered' END::delivery_status, now() - interval '8 days'
         FROM generate_series(1, 9) i`,
      [tenant.id],
    );
    expect(await sql.pruneIdempotencyKeys(world.pool, 5)).toBe(5);
    expect(await sql.prunePublishedOutbox(world.pool, 60_000, 5)).toBe(5);

    const scheduler = world.startScheduler("s1", { maintenance: { outboxKeepMs: 60_000 } });
    await scheduler.init();
    await scheduler.leaseTick();
    await scheduler.maintainOnce();
    expect((await world.pool.query(`SELECT key FROM idempotency_keys`)).rows).toEqual([{ key: "live" }]);
    // Unpublished rows and rows published within the keep time stay.
    expect(await count(world, `SELECT count(*) AS n FROM outbox`)).toBe(4);
    expect(await count(world, `SELECT count(*) AS n FROM outbox WHERE published_at IS NULL`)).toBe(2);
    // Older than the tenant's 7-day retention and no longer pending: gone; pending deliveries stay.
    expect(await count(world, `SELECT count(*) AS n FROM webhook_deliveries`)).toBe(3);
    const rows = await scheduler.metrics.maintenanceRows.get();
    const byTask = Object.fromEntries(rows.values.map((v) => [String(v.labels.task), v.value]));
    expect(byTask).toMatchObject({ idempotency_keys_released: 7, outbox_deleted: 7, webhook_deliveries_deleted: 6 });
    expect(byTask.partitions_created).toBeGreaterThan(0);
  });
});
