import { afterEach, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import { createPool } from "../client.js";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl, type TestDatabase, type TestTenant } from "../testing.js";
import { startAttempt } from "./attempts.js";
import { claimDueJobs } from "./dispatch.js";
import { insertJobs } from "./jobs.js";
import { fenceRestoredDatabase, RestoreFenceRefused } from "./restore-fence.js";
import { acquireShards, ensureShardLeases } from "./shard-leases.js";

// The fence runs on a database restored from a backup: every row in it is older than its server. These tests
// arrange that by dating the leases before the server's start, and hold one connection only (the fence refuses
// while another session is connected).
let db: TestDatabase;
let pool: pg.Pool;
let tenant: TestTenant;

beforeEach(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 1 });
  tenant = await createTestTenant(pool, { shard: 2, shardCount: 4 });
  await ensureShardLeases(pool, 4);
});
afterEach(async () => {
  await pool?.end();
  await db?.drop();
});

/** The leases as a restored database holds them: taken (epochs 1..), renewed and expired before its server started. */
async function leasesFromBeforeTheRestore() {
  await acquireShards(pool, "old-scheduler", "local", 3_000, 4, 4);
  await pool.query(
    `UPDATE shard_leases SET acquired_at = pg_postmaster_start_time() - interval '2 minutes', renewed_at = pg_postmaster_start_time() - interval '1 minute',
                             expires_at = pg_postmaster_start_time() - interval '50 seconds'`,
  );
}

const insert = async (n: number) => (await insertJobs(pool, tenant, Array.from({ length: n }, () => newTestJob(tenant.queueId)), 60_000)).map((r) => r.id);
const claim = (limit: number) => claimDueJobs(pool, { shard: tenant.shard, epoch: "1", tenantId: tenant.id, limit });
const jobToken = async (id: string) => BigInt((await pool.query<{ t: string }>(`SELECT fencing_token::text AS t FROM jobs WHERE id = $1`, [id])).rows[0]!.t);

describe("fenceRestoredDatabase", () => {
  it("advances every shard epoch and in-flight token past anything issued before it; later claims start at its floor", async () => {
    await leasesFromBeforeTheRestore();
    // Before the restore point: one job never claimed (due later), three claimed: one still dispatched, one
    // running, one failed and back to scheduled for a retry.
    const [scheduled] = (await insertJobs(pool, tenant, [newTestJob(tenant.queueId, { delay_ms: 3_600_000 })], 60_000)).map((r) => r.id);
    await insert(3);
    const [toRun, dispatchedJob, retriedJob] = await claim(10);
    expect(await startAttempt(pool, { attemptId: toRun!.attempt_id, jobId: toRun!.id, version: toRun!.version, workerId: "old-worker", leaseMs: 60_000 })).not.toBeNull();
    await pool.query(`UPDATE attempts SET status = 'failed', finished_at = now() WHERE id = $1`, [retriedJob!.attempt_id]);
    await pool.query(`UPDATE jobs SET status = 'scheduled', version = version + 1, current_attempt_id = NULL WHERE id = $1`, [retriedJob!.id]);
    await pool.query(`UPDATE jobs SET due_at = now() WHERE id = $1`, [scheduled]);
    expect([toRun, dispatchedJob, retriedJob].map((c) => c!.fencing_token)).toEqual(["1", "1", "1"]);

    const before = Date.now();
    const fence = await fenceRestoredDatabase(pool);
    const after = Date.now();
    const floor = BigInt(fence.tokenFloor);
    // The floor is the database clock's epoch milliseconds × 1000.
    expect(floor % 1000n).toBe(0n);
    expect(Number(floor / 1000n)).toBeGreaterThanOrEqual(before - 5_000);
    expect(Number(floor / 1000n)).toBeLessThanOrEqual(after + 5_000);
    expect(fence.overridden).toEqual([]);
    expect(fence.attemptsInFlight).toBe(2);

    // Shard leases: released, epochs at the floor (they were 1).
    expect(fence.shards.map((s) => [s.shard, s.from, s.to])).toEqual([0, 1, 2, 3].map((s) => [s, "1", fence.tokenFloor]));
    const { rows: leases } = await pool.query<{ holder: string | null; epoch: string }>(`SELECT holder, epoch::text FROM shard_leases`);
    expect(leases.every((l) => l.holder === null && BigInt(l.epoch) === floor)).toBe(true);
    // A takeover goes on from there; a shard added later starts at the floor.
    const [taken] = await acquireShards(pool, "new-scheduler", "local", 3_000, 1, 4);
    expect(BigInt(taken!.epoch)).toBe(floor + 1n);
    await ensureShardLeases(pool, 6);
    expect((await pool.query<{ epoch: string }>(`SELECT epoch::text FROM shard_leases WHERE shard = 5`)).rows[0]!.epoch).toBe(fence.tokenFloor);

    // In flight: the job's and its current attempt's tokens at the floor; the running attempt's lease has ended.
    for (const job of [toRun!, dispatchedJob!]) {
      expect(await jobToken(job.id)).toBe(floor);
      const { rows } = await pool.query<{ t: string; ended: boolean }>(`SELECT fencing_token::text AS t, lease_expires_at <= now() AS ended FROM attempts WHERE id = $1`, [job.attempt_id]);
      expect(BigInt(rows[0]!.t)).toBe(floor);
      if (job === toRun) expect(rows[0]!.ended).toBe(true);
    }

    // Claims after the fence: never claimed (token 0) and claimed once before (token 1) both get the floor; the
    // attempt numbers go on counting (1, and 2 after the first attempt).
    const next = await claim(10);
    expect(next.map((c) => c.id).sort()).toEqual([scheduled, retriedJob!.id].sort());
    expect(next.every((c) => BigInt(c.fencing_token) === floor)).toBe(true);
    const { rows: numbers } = await pool.query<{ job_id: string; number: number }>(`SELECT job_id, number FROM attempts WHERE id = ANY($1::uuid[])`, [next.map((c) => c.attempt_id)]);
    expect(Object.fromEntries(numbers.map((r) => [r.job_id, r.number]))).toEqual({ [scheduled!]: 1, [retriedJob!.id]: 2 });

    // Audit entries made after the fence have ids above the floor.
    const { rows: audit } = await pool.query<{ id: string }>(
      `INSERT INTO audit_log (tenant_id, actor_type, action) VALUES ($1, 'system', 'probe') RETURNING id::text`,
      [tenant.id],
    );
    expect(BigInt(audit[0]!.id)).toBe(floor + 1n);

    const { rows: recorded } = await pool.query(`SELECT token_floor::text, shards, attempts_in_flight, overridden FROM restore_fences`);
    expect(recorded).toEqual([{ token_floor: fence.tokenFloor, shards: 4, attempts_in_flight: 2, overridden: [] }]);
  });

  it("gives each later fence a higher floor, and claims follow the highest", async () => {
    await leasesFromBeforeTheRestore();
    const first = await fenceRestoredDatabase(pool);
    const second = await fenceRestoredDatabase(pool);
    expect(BigInt(second.tokenFloor)).toBeGreaterThan(BigInt(first.tokenFloor));
    expect(second.shards.every((s) => s.from === first.tokenFloor && s.to === second.tokenFloor)).toBe(true);
    const [id] = await insert(1);
    await claim(1);
    expect(await jobToken(id!)).toBe(BigInt(second.tokenFloor));
  });

  it("refuses while another session is connected or a lease looks live, and runs with force, saying what it overrode", async () => {
    await leasesFromBeforeTheRestore();
    const other = new pg.Client({ connectionString: db.url, application_name: "tick-scheduler" });
    await other.connect();
    try {
      await pool.query(`UPDATE shard_leases SET holder = 'sched-9', renewed_at = now(), expires_at = now() + interval '1 minute' WHERE shard = 1`);
      const refused = await fenceRestoredDatabase(pool).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(RestoreFenceRefused);
      const { reasons, overridable } = refused as RestoreFenceRefused;
      expect(overridable).toBe(true);
      expect(reasons[0]).toBe("1 other session(s) connected (tick-scheduler from 127.0.0.1)");
      expect(reasons[1]).toMatch(/^shard 1's lease, held by sched-9, was renewed at .*, after this server started/);
      expect((await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM restore_fences`)).rows[0]!.n).toBe(0);

      const forced = await fenceRestoredDatabase(pool, { force: true });
      expect(forced.overridden).toEqual(reasons);
      expect((await pool.query<{ overridden: string[] }>(`SELECT overridden FROM restore_fences`)).rows[0]!.overridden).toEqual(reasons);
    } finally {
      await other.end();
    }
  });

  it("refuses, even with force, when the database clock is not past the newest instant in the restored data", async () => {
    await leasesFromBeforeTheRestore();
    await pool.query(`UPDATE shard_leases SET renewed_at = now() + interval '1 hour' WHERE shard = 3`);
    const refused = await fenceRestoredDatabase(pool, { force: true }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(RestoreFenceRefused);
    expect((refused as RestoreFenceRefused).overridable).toBe(false);
    expect((refused as RestoreFenceRefused).message).toMatch(/the database clock \(.*\) is not past the newest instant in the restored data/);
    // Nothing changed.
    expect((await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM restore_fences`)).rows[0]!.n).toBe(0);
    expect((await pool.query(`SELECT DISTINCT epoch::text FROM shard_leases`)).rows).toEqual([{ epoch: "1" }]);
  });
});
