// Flow keys in the claim (sql.claimDueJobs' key scan): fair share between a queue's keys, per-key caps kept
// by the in-flight counters, overrides, pauses, weights and the per-key token bucket.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sql } from "@tick/db";
import { createWorld, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

type Tenant = { id: string; queueId: string; shard: number };

/** `count` jobs of `key` (null: without a key), due `dueInMs` from now (negative: overdue). */
async function insertKeyed(t: Tenant, key: string | null, count: number, options: { dueInMs?: number; priority?: number } = {}): Promise<void> {
  await w.pool.query(
    `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, priority, url, flow_key, updated_at)
     SELECT gen_random_uuid(), $1, $2, $3, now() + make_interval(secs => $5 / 1000.0) + make_interval(secs => g / 1000.0), $6,
            'https://93.184.216.34/x', $7, now()
       FROM generate_series(1, $4) g`,
    [t.id, t.queueId, t.shard, count, options.dueInMs ?? -60_000, options.priority ?? 0, key],
  );
}

const cursors: Record<string, string> = {};

/** One claim of up to `limit` of the tenant's due jobs, as the dispatcher makes it (key cursors kept between calls). */
async function claim(t: Tenant, limit: number): Promise<sql.ClaimedJob[]> {
  const client = await w.pool.connect();
  try {
    await client.query("BEGIN");
    const rows = await sql.claimDueJobs(client, { shard: t.shard, epoch: "1", tenantId: t.id, limit, keyed: true, keyCursors: cursors });
    await client.query("COMMIT");
    sql.advanceKeyCursors(cursors, rows);
    return rows;
  } finally {
    client.release();
  }
}

const perKey = (rows: sql.ClaimedJob[]) => {
  const n = new Map<string | null, number>();
  for (const r of rows) n.set(r.flow_key, (n.get(r.flow_key) ?? 0) + 1);
  return n;
};

const inFlight = async (queueId: string) =>
  new Map(
    (await w.pool.query<{ key: string; in_flight: number }>(`SELECT key, in_flight FROM flow_keys WHERE queue_id = $1`, [queueId])).rows.map((r) => [r.key, r.in_flight]),
  );

/** Ends a dispatched job as a worker's requeue would (dispatched → scheduled): its key's slot is freed. */
async function requeue(job: sql.ClaimedJob): Promise<void> {
  const back = await sql.requeueAttempt(w.pool, { attemptId: job.attempt_id, jobId: job.id, version: job.version, delayMs: 3_600_000, reason: "test" });
  expect(back).not.toBeNull();
}

describe("the key scan", () => {
  beforeEach(() => {
    for (const k of Object.keys(cursors)) delete cursors[k];
  });

  it("serves a key with one due job in the same claim as a key with a 2,000-job backlog that is older", async () => {
    const t = await w.createTenant();
    await insertKeyed(t, "big", 2_000, { dueInMs: -3_600_000 });
    for (let i = 0; i < 20; i++) await insertKeyed(t, `small-${String(i).padStart(2, "0")}`, 1);
    const rows = await claim(t, 50);
    expect(rows).toHaveLength(50);
    const n = perKey(rows);
    for (let i = 0; i < 20; i++) expect(n.get(`small-${String(i).padStart(2, "0")}`)).toBe(1);
    expect(n.get("big")).toBe(30);
    const queue = await w.pool.query<{ flow_keyed: boolean }>(`SELECT flow_keyed FROM queues WHERE id = $1`, [t.queueId]);
    expect(queue.rows[0]!.flow_keyed).toBe(true);
  });

  it("goes round the keys when a claim cannot serve them all, and comes back to the first", async () => {
    const t = await w.createTenant();
    for (let i = 0; i < 10; i++) await insertKeyed(t, `k${i}`, 5);
    const seen: string[] = [];
    for (let round = 0; round < 4; round++) seen.push(...(await claim(t, 3)).map((r) => r.flow_key!));
    expect(seen.slice(0, 9).sort()).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"]);
    // The fourth claim takes the last key, then wraps to the first.
    expect(seen.slice(9).sort()).toEqual(["k0", "k1", "k9"]);
  });

  it("jobs without a key in a keyed queue take turns as one more key", async () => {
    const t = await w.createTenant();
    await insertKeyed(t, null, 500, { dueInMs: -3_600_000 });
    for (let i = 0; i < 10; i++) await insertKeyed(t, `k${i}`, 1);
    const n = perKey(await claim(t, 20));
    for (let i = 0; i < 10; i++) expect(n.get(`k${i}`)).toBe(1);
    expect(n.get(null)).toBe(10);
  });

  it("orders a key's own jobs by priority, and a higher priority goes before other keys' turns", async () => {
    const t = await w.createTenant();
    await insertKeyed(t, "a", 5);
    await insertKeyed(t, "a", 1, { priority: 10 });
    await insertKeyed(t, "b", 5);
    const rows = await claim(t, 3);
    expect(rows[0]!.priority).toBe(10);
    expect(rows.map((r) => r.flow_key).sort()).toEqual(["a", "a", "b"]);
  });

  it("gives a key weight w times the jobs of a key of weight 1", async () => {
    const t = await w.createTenant();
    await insertKeyed(t, "heavy", 100);
    await insertKeyed(t, "light", 100);
    await w.pool.query(`INSERT INTO flow_keys (queue_id, key, tenant_id, weight) VALUES ($1, 'heavy', $2, 3)`, [t.queueId, t.id]);
    const n = perKey(await claim(t, 40));
    expect(n.get("heavy")).toBe(30);
    expect(n.get("light")).toBe(10);
  });
});

describe("per-key limits", () => {
  it("never puts more than the queue's perKeyConcurrency of a key in flight; a freed slot is taken again", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_concurrency = 2 WHERE id = $1`, [t.queueId]);
    for (let i = 0; i < 5; i++) await insertKeyed(t, `k${i}`, 10);
    const first = await claim(t, 100);
    expect(first).toHaveLength(10);
    expect([...perKey(first).values()]).toEqual([2, 2, 2, 2, 2]);
    expect(await claim(t, 100)).toHaveLength(0);
    expect([...(await inFlight(t.queueId)).values()]).toEqual([2, 2, 2, 2, 2]);

    await requeue(first.find((r) => r.flow_key === "k3")!);
    expect((await inFlight(t.queueId)).get("k3")).toBe(1);
    const again = await claim(t, 100);
    expect(again.map((r) => r.flow_key)).toEqual(["k3"]);
    expect((await inFlight(t.queueId)).get("k3")).toBe(2);
  });

  it("finds a slot freed behind keys at their cap: keys at their cap do not use up the scan", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_concurrency = 1 WHERE id = $1`, [t.queueId]);
    for (let i = 0; i < 10; i++) await insertKeyed(t, `k${i}`, 2);
    const first = await claim(t, 100);
    expect(first).toHaveLength(10);
    // The last key's slot frees; the scan starts after it and meets nine keys at their cap first.
    await requeue(first.find((r) => r.flow_key === "k9")!);
    await w.pool.query(`UPDATE jobs SET due_at = now() - interval '1 second' WHERE flow_key = 'k9' AND status = 'scheduled'`);
    const again = await claim(t, 3);
    expect(again.map((r) => r.flow_key)).toEqual(["k9"]);
  });

  it("an override raises or lowers one key's cap, and a paused key holds its jobs until resumed", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_concurrency = 2 WHERE id = $1`, [t.queueId]);
    for (const k of ["premium", "normal", "paused"]) await insertKeyed(t, k, 20);
    await w.pool.query(
      `INSERT INTO flow_keys (queue_id, key, tenant_id, concurrency, paused) VALUES ($1, 'premium', $2, 10, false), ($1, 'paused', $2, NULL, true)`,
      [t.queueId, t.id],
    );
    const n = perKey(await claim(t, 100));
    expect(n.get("premium")).toBe(10);
    expect(n.get("normal")).toBe(2);
    expect(n.get("paused")).toBeUndefined();
    await w.pool.query(`UPDATE flow_keys SET paused = false WHERE queue_id = $1 AND key = 'paused'`, [t.queueId]);
    expect(perKey(await claim(t, 100)).get("paused")).toBe(2);
  });

  it("a key's token bucket: a burst of its limit, then the limit per period", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_rate_limit = 3, per_key_rate_period_ms = 1000 WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "a", 50);
    await insertKeyed(t, "b", 50);
    const start = Date.now();
    expect([...perKey(await claim(t, 100)).values()]).toEqual([3, 3]);
    expect(await claim(t, 100)).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 1_000 - (Date.now() - start) + 50));
    const later = perKey(await claim(t, 100));
    expect(later.get("a")).toBe(3);
    expect(later.get("b")).toBe(3);
    const bucket = await w.pool.query<{ tokens: number }>(`SELECT tokens FROM flow_key_buckets WHERE queue_id = $1 AND key = 'a'`, [t.queueId]);
    expect(bucket.rows[0]!.tokens).toBeLessThan(1);
  });

  it("a bucket a claim spends while the clean-up deletes full buckets is kept: no second burst at once", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_rate_limit = 3, per_key_rate_period_ms = 1000 WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "a", 20);
    // Full again (spent 10 s ago), so the clean-up may forget it...
    await w.pool.query(`INSERT INTO flow_key_buckets (queue_id, key, tokens, tokens_at) VALUES ($1, 'a', 0, now() - interval '10 seconds')`, [t.queueId]);
    // ...but a claim spends it while the clean-up's DELETE, its snapshot taken before, waits for the row.
    const claimer = await w.pool.connect();
    try {
      await claimer.query("BEGIN");
      const claimed = await sql.claimDueJobs(claimer, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 100, keyed: true });
      expect(claimed).toHaveLength(3);
      const pruned = sql.pruneIdleFlowKeys(w.pool, 1_000);
      for (let waited = 0; ; waited += 20) {
        const { rows } = await w.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM flow_key_buckets%'`,
        );
        if (rows[0]!.n > 0) break;
        if (waited > 5_000) throw new Error("the clean-up never waited for the bucket's row");
        await new Promise((r) => setTimeout(r, 20));
      }
      await claimer.query("COMMIT");
      await pruned;
    } finally {
      claimer.release();
    }
    const bucket = await w.pool.query<{ tokens: number }>(`SELECT tokens FROM flow_key_buckets WHERE queue_id = $1 AND key = 'a'`, [t.queueId]);
    expect(bucket.rows[0]?.tokens).toBeLessThan(1);
    expect(await claim(t, 100)).toHaveLength(0);
  });

  it("a claim whose transaction began before a pause is judged, stamped and spent at its statement's time", async () => {
    // A scheduler frozen after its transaction passed the fence runs its claim seconds later. Meanwhile the
    // clean-up forgot the key's bucket, full again by then. Read at the transaction's start time, the claim took
    // a whole burst dated right after the previous one: twice the limit within a few milliseconds.
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_rate_limit = 3, per_key_rate_period_ms = 1000 WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "a", 20);
    expect(await claim(t, 100)).toHaveLength(3);
    const late = await w.pool.connect();
    try {
      await late.query("BEGIN");
      await late.query("SELECT now()");
      await new Promise((r) => setTimeout(r, 1_300));
      expect(await sql.pruneIdleFlowKeys(w.pool, 1_000)).toBeGreaterThan(0);
      const claimed = await sql.claimDueJobs(late, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 100, keyed: true });
      expect(claimed).toHaveLength(3);
      await late.query("COMMIT");
    } finally {
      late.release();
    }
    // The claims replayed through a bucket of 3 per second by the times they carry: none without a token.
    const { rows } = await w.pool.query<{ at: number }>(
      `SELECT extract(epoch FROM a.claimed_at) * 1000 AS at FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.queue_id = $1 ORDER BY a.claimed_at`,
      [t.queueId],
    );
    expect(rows).toHaveLength(6);
    let tokens = 3;
    let last = Number(rows[0]!.at);
    for (const { at } of rows) {
      tokens = Math.min(3, tokens + ((Number(at) - last + 0.5) * 3) / 1000) - 1;
      last = Number(at);
      expect(tokens).toBeGreaterThan(-1e-9);
    }
  });

  it("the drop after a claim reads the bucket at the same time basis: a key left with a whole token keeps its job", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_rate_limit = 3, per_key_rate_period_ms = 1000, per_key_rate_mode = 'drop' WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "a", 3);
    const round = await w.pool.connect();
    try {
      // As the dispatcher's round: the claim, then the drop, in one transaction that began a little earlier.
      await round.query("BEGIN");
      await round.query("SELECT now()");
      await new Promise((r) => setTimeout(r, 100));
      const claimed = await sql.claimDueJobs(round, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 2, keyed: true });
      expect(claimed).toHaveLength(2);
      // One whole token is left for the third job: it is kept for the next claim, not dropped.
      expect(await sql.dropRateLimitedJobs(round, t.shard, t.id, 100)).toEqual([]);
      await round.query("COMMIT");
    } finally {
      round.release();
    }
  });

  it("a queue's concurrency still caps the sum of its keys", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET concurrency = 7 WHERE id = $1`, [t.queueId]);
    for (let i = 0; i < 5; i++) await insertKeyed(t, `k${i}`, 10);
    await insertKeyed(t, null, 10);
    expect(await claim(t, 100)).toHaveLength(7);
    expect(await claim(t, 100)).toHaveLength(0);
  });
});

describe("the in-flight counts under faults, the metrics and the clean-up", () => {
  it("a statement that moves many jobs of a key writes the key's counter once, and every count stays exact", async () => {
    const t = await w.createTenant();
    await w.pool.query(`UPDATE tenants SET max_in_flight = 1000 WHERE id = $1`, [t.id]);
    await insertKeyed(t, "a", 120);
    await insertKeyed(t, "b", 40);
    await insertKeyed(t, null, 10);
    await insertKeyed(t, "c", 5, { dueInMs: 3_600_000 });
    const exact = async () => {
      const { rows } = await w.pool.query<{ key: string; n: number }>(
        `SELECT flow_key AS key, count(*)::int AS n FROM jobs WHERE queue_id = $1 AND flow_key IS NOT NULL AND status IN ('dispatched', 'running') GROUP BY flow_key`,
        [t.queueId],
      );
      return new Map(rows.map((r) => [r.key, r.n]));
    };
    const countersOf = async () => new Map([...(await inFlight(t.queueId))].filter(([, n]) => n > 0));
    // One claim of 170 jobs of two keys: each key's row is written once (a row trigger wrote it 160 times).
    const client = await w.pool.connect();
    try {
      await client.query("BEGIN");
      const rows = await sql.claimDueJobs(client, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 500, keyed: true, keyCursors: {} });
      expect(rows).toHaveLength(170);
      const writes = await client.query<{ n: number }>(`SELECT (n_tup_ins + n_tup_upd)::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'flow_keys'`);
      expect(writes.rows[0]!.n).toBe(2);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    expect(await countersOf()).toEqual(new Map([["a", 120], ["b", 40]]));
    expect(await countersOf()).toEqual(await exact());
    // One statement moves jobs of three keys both ways: 30 of a and all of b leave flight, c's 5 enter it.
    await w.pool.query(
      `UPDATE jobs SET status = CASE WHEN flow_key = 'c' THEN 'dispatched'::job_status ELSE 'scheduled'::job_status END, updated_at = now()
        WHERE id IN (SELECT id FROM jobs WHERE queue_id = $1 AND flow_key = 'a' ORDER BY id LIMIT 30)
           OR (queue_id = $1 AND flow_key IN ('b', 'c'))`,
      [t.queueId],
    );
    expect(await countersOf()).toEqual(new Map([["a", 90], ["c", 5]]));
    expect(await countersOf()).toEqual(await exact());
    // A statement that changes no status (nor any keyed job) leaves the counters as they are.
    await w.pool.query(`UPDATE jobs SET priority = priority + 1 WHERE queue_id = $1`, [t.queueId]);
    expect(await countersOf()).toEqual(await exact());
  });

  it("a lease that ran out keeps its key's slot until the reaper settles the attempt, which the metric counts", async () => {
    const s = w.startScheduler("s", { leaseGraceMs: 0 });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_concurrency = 1 WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "k", 2);
    expect(await s.dispatchOnce()).toBe(1);
    const [job] = (await w.pool.query<{ id: string; version: number; current_attempt_id: string }>(`SELECT id, version, current_attempt_id FROM jobs WHERE status = 'dispatched'`)).rows;
    const started = await sql.startAttempt(w.pool, { attemptId: job!.current_attempt_id, jobId: job!.id, version: job!.version, workerId: "frozen", leaseMs: 60_000 });
    expect(started).not.toBeNull();
    // The worker froze: its lease ends, but until the reaper settles the attempt the key stays at its cap.
    await w.pool.query(`UPDATE attempts SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [job!.current_attempt_id]);
    expect(await s.dispatchOnce()).toBe(0);
    expect((await inFlight(t.queueId)).get("k")).toBe(1);
    const reaped = await s.reapOnce();
    expect(reaped.reduce((n, r) => n + r.leasesReaped, 0)).toBe(1);
    expect((await inFlight(t.queueId)).get("k")).toBe(0);
    expect((await s.metrics.flowKeyLeaseExpiries.get()).values[0]?.value).toBe(1);
    // The slot is free: the other job (or the retry, once due) goes.
    expect(await s.dispatchOnce()).toBe(1);
  });

  it("the maintenance round exports the jobs held by key limits and forgets idle keys' state", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_concurrency = 1 WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "capped", 3);
    await insertKeyed(t, "paused", 2);
    await insertKeyed(t, "idle", 1);
    await w.pool.query(`INSERT INTO flow_keys (queue_id, key, tenant_id, paused, overridden_at) VALUES ($1, 'paused', $2, true, now())`, [t.queueId, t.id]);
    expect(await s.dispatchOnce()).toBe(2); // capped and idle, one each
    const idle = (await w.pool.query<{ id: string }>(`SELECT id FROM jobs WHERE flow_key = 'idle'`)).rows[0]!;
    await w.pool.query(`UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE id = $1`, [idle.id]);
    await s.maintainOnce();
    const held = new Map((await s.metrics.flowKeyHeldJobs.get()).values.map((v) => [v.labels.reason, v.value]));
    expect(Object.fromEntries(held)).toEqual({ key_paused: 2, key_at_cap: 2, key_over_rate: 0 });
    const keys = new Map((await s.metrics.flowKeysHolding.get()).values.map((v) => [v.labels.reason, v.value]));
    expect(Object.fromEntries(keys)).toEqual({ key_paused: 1, key_at_cap: 1, key_over_rate: 0 });
    // The idle key's row (nothing in flight, no override) is gone; the capped and the paused ones stay.
    expect([...(await inFlight(t.queueId)).keys()].sort()).toEqual(["capped", "paused"]);
  });
});

describe("a queue that drops what is over a key's rate", () => {
  it("ends a key's due jobs beyond its tokens rate_limited with their webhook, keeps the held and the other keys' jobs", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.pool.query(`UPDATE queues SET per_key_rate_limit = 2, per_key_rate_period_ms = 60000, per_key_rate_mode = 'drop' WHERE id = $1`, [t.queueId]);
    await w.pool.query(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, secret, events, enabled, updated_at) VALUES (gen_random_uuid(), $1, 'https://93.184.216.34/hooks', 'unused', ARRAY['job.rate_limited'], true, now())`,
      [t.id],
    );
    await insertKeyed(t, "noisy", 5);
    await insertKeyed(t, "quiet", 1);
    await insertKeyed(t, "paused", 4);
    await insertKeyed(t, "later", 3, { dueInMs: 3_600_000 });
    await w.pool.query(`INSERT INTO flow_keys (queue_id, key, tenant_id, paused, overridden_at) VALUES ($1, 'paused', $2, true, now())`, [t.queueId, t.id]);
    // A paused key whose bucket is empty too: held, never dropped.
    await w.pool.query(`INSERT INTO flow_key_buckets (queue_id, key, tokens, tokens_at) VALUES ($1, 'paused', 0, now())`, [t.queueId]);

    expect(await s.dispatchOnce()).toBe(3); // noisy's 2 tokens, quiet's 1
    const byKey = await w.pool.query<{ flow_key: string; status: string; n: number }>(
      `SELECT flow_key, status::text, count(*)::int AS n FROM jobs WHERE tenant_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [t.id],
    );
    expect(byKey.rows).toEqual([
      { flow_key: "later", status: "scheduled", n: 3 },
      { flow_key: "noisy", status: "dispatched", n: 2 },
      { flow_key: "noisy", status: "rate_limited", n: 3 },
      { flow_key: "paused", status: "scheduled", n: 4 },
      { flow_key: "quiet", status: "dispatched", n: 1 },
    ]);
    const dropped = await w.pool.query<{ last_error: { kind: string }; finished_at: Date | null }>(`SELECT last_error, finished_at FROM jobs WHERE status = 'rate_limited'`);
    expect(dropped.rows.every((r) => r.last_error.kind === "rate_limited" && r.finished_at !== null)).toBe(true);
    const hooks = await w.pool.query<{ event: string; n: number }>(`SELECT event, count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1 GROUP BY 1`, [t.id]);
    expect(hooks.rows).toEqual([{ event: "job.rate_limited", n: 3 }]);
    expect((await s.metrics.flowKeyDropped.get()).values[0]?.value).toBe(3);
    // The same queue in delay mode keeps them waiting instead.
    await w.pool.query(`UPDATE queues SET per_key_rate_mode = 'delay' WHERE id = $1`, [t.queueId]);
    await insertKeyed(t, "noisy", 2);
    expect(await s.dispatchOnce()).toBe(0);
    expect((await w.pool.query(`SELECT 1 FROM jobs WHERE flow_key = 'noisy' AND status = 'scheduled'`)).rowCount).toBe(2);
  });
});
