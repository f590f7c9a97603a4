import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createTestDatabase, testServerUrl, type TestDatabase } from "@tick/db/testing";
import {
  checkDebounceWindows,
  checkInvariants,
  keyCapOverlaps,
  keyRateExcess,
  maxInWindow,
  tokenBucketWindowBound,
  type DebounceCreate,
  type DebounceJobFacts,
  type DebounceRule,
} from "./checker.js";
import type { ChaosSink, Delivery } from "./sink.js";
import { KEYED_QUEUES, type DebounceAnswer, type Op, type OpKind } from "./workload.js";

// The checker must be able to fail: each broken promise planted here has to be reported.

let db: TestDatabase;
let pool: pg.Pool;
let tenant: string;
let queue: string;
beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  tenant = crypto.randomUUID();
  await pool.query(`INSERT INTO tenants (id, slug, name, shard, updated_at) VALUES ($1, 't', 't', 0, now())`, [tenant]);
  queue = (await pool.query<{ id: string }>(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'default', now()) RETURNING id`, [tenant])).rows[0]!.id;
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

async function job(key: string, status: string, attempts: { status: string; token: number }[]): Promise<{ id: string; attemptIds: string[] }> {
  const id = crypto.randomUUID();
  const token = Math.max(0, ...attempts.map((a) => a.token));
  await pool.query(
    `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, updated_at, idempotency_key, fencing_token) VALUES ($1, $2, $3, 0, $4, now(), 'http://x', now(), $5, $6)`,
    [id, tenant, queue, status, key, token],
  );
  const attemptIds: string[] = [];
  for (const a of attempts) {
    const r = await pool.query<{ id: string }>(
      `INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, dispatched_at) VALUES (gen_random_uuid(), $1, $2, $3::int, $3::int, 1, 1, $4, now()) RETURNING id`,
      [id, tenant, a.token, a.status],
    );
    attemptIds.push(r.rows[0]!.id);
  }
  return { id, attemptIds };
}

const op = (key: string, kind: OpKind, jobId: string | null, cancel: Op["cancel"] = null, cancelAttemptsStarted?: number): Op => ({
  key,
  tenant: "t",
  kind,
  phase: "p",
  createdAt: Date.now() - 1_000,
  jobId,
  createRetries: 0,
  cancel,
  ...(cancelAttemptsStarted === undefined ? {} : { cancelAttemptsStarted }),
});
const phaseRun = (name: string, faultMs: number | null = 0) => ({ name, scenarios: "-", faults: 0, startedAt: 0, endedAt: 1, faultMs });
const delivery = (key: string, attemptId: string, status = 200): Delivery => ({ key, jobId: `job-of-${key}`, attemptId, fencingToken: 1, path: "/ok", receivedAt: Date.now(), at: Date.now(), status });

describe("checkInvariants", () => {
  it("passes a clean run and reports each planted violation", async () => {
    const good = await job("good", "succeeded", [{ status: "failed", token: 1 }, { status: "succeeded", token: 2 }]);
    const stuck = await job("stuck", "running", [{ status: "running", token: 1 }]);
    const twice = await job("twice", "succeeded", [{ status: "succeeded", token: 1 }, { status: "succeeded", token: 2 }]);
    const noEffect = await job("no-effect", "succeeded", [{ status: "succeeded", token: 1 }]);
    const cancelled = await job("cancelled", "cancelled", []);
    const retried = await job("retried", "cancelled", [{ status: "failed", token: 1 }]);
    const overSent = await job("over-sent", "cancelled", [{ status: "failed", token: 1 }]);
    const dup1 = await job("dup", "succeeded", [{ status: "succeeded", token: 1 }]);
    const behind = await job("behind", "succeeded", [{ status: "succeeded", token: 3 }]);
    await pool.query(`UPDATE jobs SET fencing_token = 1 WHERE id = $1`, [behind.id]);
    // A tenant's quota count one off its live jobs (1, stuck), beside another tenant whose count is right.
    await pool.query(`INSERT INTO tenant_live_job_counts (shard, tenant_id, n) SELECT shard, tenant_id, 1 FROM jobs WHERE id = $1`, [good.id]);
    const other = crypto.randomUUID();
    await pool.query(`INSERT INTO tenants (id, slug, name, shard, updated_at) VALUES ($1, 't2', 't2', 3, now())`, [other]);
    await pool.query(
      `WITH q AS (INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'default', now()) RETURNING id)
       INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, updated_at) SELECT gen_random_uuid(), $1, q.id, 3, 'scheduled', now() + interval '1 hour', 'http://x', now() FROM q, generate_series(1, 3)`,
      [other],
    );

    const sink = {
      keyedCalls: [],
      deliveries: [
        delivery("good", good.attemptIds[0]!, 503),
        delivery("good", good.attemptIds[1]!),
        delivery("good", good.attemptIds[1]!), // a raw duplicate, not a second effect
        delivery("twice", twice.attemptIds[0]!),
        delivery("cancelled", "somewhere"),
        delivery("retried", retried.attemptIds[0]!, 500), // the attempt the cancel reported
        delivery("over-sent", overSent.attemptIds[0]!, 500),
        delivery("over-sent", "a-request-after-the-cancel", 500),
        delivery("dup", dup1.attemptIds[0]!),
        delivery("dup", "attempt-of-another-job"),
        delivery("behind", behind.attemptIds[0]!),
      ],
      effects: new Map(),
      webhooks: [],
    } as unknown as ChaosSink;
    const ops = [
      op("good", "ok", good.id),
      op("stuck", "ok", stuck.id),
      op("twice", "ok", twice.id),
      op("no-effect", "ok", noEffect.id),
      op("cancelled", "cancel", cancelled.id, "cancelled"),
      op("retried", "cancel", retried.id, "cancelled_after_attempts", 1),
      op("over-sent", "cancel", overSent.id, "cancelled_after_attempts", 1),
      op("dup", "ok", dup1.id),
      op("behind", "ok", behind.id),
      op("missing", "ok", crypto.randomUUID()),
    ];
    const verdict = await checkInvariants({ pool, sink, ops, phases: [phaseRun("p")], quietLagBoundMs: 5_000, leaseTtlMs: 3_000, startLagSlackMs: 4_000, heldDependencies: [] });
    const text = verdict.violations.join("\n");
    expect(text).not.toContain("good");
    expect(text).toContain("stuck (ok");
    expect(text).toContain("twice: 2 successful attempts recorded");
    expect(text).toContain("no-effect (ok");
    expect(text).toContain("cancelled before it started, yet delivered");
    expect(text).not.toContain("retried");
    expect(text).toContain("cancelled after 1 attempts, yet delivered 2 times");
    expect(text).toContain("dup: effects from 2 different jobs");
    expect(text).toContain(`job ${behind.id}: fencing token 1 is not its newest attempt's`);
    expect(text).toContain("missing (ok");
    expect(text).toContain("1 jobs still dispatched or running after the drain");
    expect(text).toContain(`tenant ${tenant}: pending-job count 2, live jobs 1`);
    expect(text).not.toContain(`tenant ${other}`);
    expect(verdict.facts.tenantsWithLiveCountOff).toBe(1);
    expect(verdict.rows[0]).toMatchObject({ jobs: 10, rawDuplicateDeliveries: 2 }); // good once, dup once
    expect(verdict.rows[0]!.lost).toBeGreaterThanOrEqual(4);
    expect(verdict.rows[0]!.duplicateEffects).toBe(2);
  });

  it("holds every tenant's start lag in a single-fault phase to fault + 2 lease TTLs + slack", async () => {
    // Started 20 s after it was created (due at once): over 1 s + 2 × 3 s + 4 s.
    const late = await job("late", "succeeded", [{ status: "succeeded", token: 1 }]);
    // A retry due when its predecessor failed plus the policy's largest backoff (1 s): 0.5 s late.
    const retry = await job("retry", "succeeded", [{ status: "failed", token: 1 }, { status: "succeeded", token: 2 }]);
    // Late too, but its dependency's breaker may have held it at the claim: not judged.
    const held = await job("held", "succeeded", [{ status: "succeeded", token: 1 }]);
    await pool.query(`UPDATE jobs SET created_at = now() - interval '20 seconds', backoff = '{"strategy":"fixed","baseMs":1000,"maxMs":1000,"jitter":"none"}' WHERE id = ANY($1::uuid[])`, [[late.id, retry.id, held.id]]);
    await pool.query(`UPDATE jobs SET dependency_key = 'down' WHERE id = $1`, [held.id]);
    await pool.query(`UPDATE attempts SET started_at = now() WHERE id = ANY($1::uuid[])`, [[late.attemptIds[0], held.attemptIds[0], retry.attemptIds[1]]]);
    await pool.query(`UPDATE attempts SET started_at = now() - interval '19 seconds', finished_at = now() - interval '1.5 seconds' WHERE id = $1`, [retry.attemptIds[0]]);
    const window = { startedAt: Date.now() - 60_000, endedAt: Date.now() + 5_000 };
    const sink = { deliveries: [], keyedCalls: [], effects: new Map(), webhooks: [] } as unknown as ChaosSink;
    const args = { pool, sink, ops: [], quietLagBoundMs: 5_000, leaseTtlMs: 3_000, startLagSlackMs: 4_000, heldDependencies: ["down"] };

    const judged = await checkInvariants({ ...args, phases: [{ ...phaseRun("cut", 1_000), ...window }] });
    const row = judged.rows.find((r) => r.phase === "cut")!;
    expect(row.startLagBoundMs).toBe(11_000);
    expect(row.maxStartLagMs).toBeGreaterThanOrEqual(19_000);
    expect(row.startLagSlowest).toContain(late.id);
    expect(judged.violations.filter((v) => v.includes("after it was due"))).toHaveLength(1);
    expect(judged.violations.join("\n")).not.toContain(held.id);

    const notJudged = await checkInvariants({ ...args, phases: [{ ...phaseRun("burst", null), ...window }] });
    expect(notJudged.violations.filter((v) => v.includes("after it was due"))).toHaveLength(0);
    expect(notJudged.rows.find((r) => r.phase === "burst")!.maxStartLagMs).toBeGreaterThanOrEqual(19_000);
  });

  it("holds a job due just before the next phase's fault to that fault's recovery, counted from the fault", async () => {
    // Phase "steady" (bound 0 + 2 × 3 s + 4 s = 10 s) ends 19.5 s ago; "cut" (10 s: bound 20 s) faults 19 s ago.
    const caught = await job("caught", "succeeded", [{ status: "succeeded", token: 1 }]); // due 1 s before: bound 21 s
    const tooLate = await job("too-late", "succeeded", [{ status: "succeeded", token: 1 }]); // due 1 s before, started 25 s after
    const stale = await job("stale", "succeeded", [{ status: "succeeded", token: 1 }]); // due 21 s before the fault: own bound
    await pool.query(`UPDATE jobs SET created_at = now() - interval '20 seconds' WHERE id = ANY($1::uuid[])`, [[caught.id, tooLate.id]]);
    await pool.query(`UPDATE jobs SET created_at = now() - interval '40 seconds' WHERE id = $1`, [stale.id]);
    await pool.query(`UPDATE attempts SET started_at = now() WHERE id = ANY($1::uuid[])`, [[caught.attemptIds[0], stale.attemptIds[0]]]);
    await pool.query(`UPDATE attempts SET started_at = now() + interval '5 seconds' WHERE id = $1`, [tooLate.attemptIds[0]]);
    const now = Date.now();
    const phases = [
      { ...phaseRun("steady", 0), startedAt: now - 60_000, endedAt: now - 19_500 },
      { ...phaseRun("cut", 10_000), startedAt: now - 19_500, faultAt: now - 19_000, endedAt: now + 10_000 },
    ];
    const sink = { deliveries: [], keyedCalls: [], effects: new Map(), webhooks: [] } as unknown as ChaosSink;
    const verdict = await checkInvariants({ pool, sink, ops: [], phases, quietLagBoundMs: 5_000, leaseTtlMs: 3_000, startLagSlackMs: 4_000, heldDependencies: [] });
    const lagViolations = verdict.violations.filter((v) => v.includes("after it was due"));
    // One violation per phase, the attempt furthest over its bound: too-late (25 s against 21 s) is 4 s over,
    // stale (40 s against 10 s) is 30 s over.
    expect(lagViolations).toHaveLength(1);
    expect(lagViolations[0]).toContain(stale.id);
    expect(lagViolations[0]).toContain("bound 10000 ms");

    await pool.query(`UPDATE jobs SET created_at = now() - interval '20 seconds' WHERE id = $1`, [stale.id]);
    const second = await checkInvariants({ pool, sink, ops: [], phases, quietLagBoundMs: 5_000, leaseTtlMs: 3_000, startLagSlackMs: 4_000, heldDependencies: [] });
    const left = second.violations.filter((v) => v.includes("after it was due"));
    expect(left).toHaveLength(1);
    expect(left[0]).toContain(tooLate.id);
    expect(left[0]).toMatch(/before "cut"'s fault/);
    expect(second.violations.join("\n")).not.toContain(caught.id);
  });
});

describe("checkInvariants on flow keys", () => {
  it("reads settled leases, claim times and debounced jobs from the database", async () => {
    // The workload's keyed tenant and its queues, by the names the checker looks for.
    const keyed = crypto.randomUUID();
    await pool.query(`INSERT INTO tenants (id, slug, name, shard, updated_at) VALUES ($1, 'keyed', 'keyed', 0, now())`, [keyed]);
    const queueOf = async (name: string) =>
      (await pool.query<{ id: string }>(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1, $2, now()) RETURNING id`, [keyed, name])).rows[0]!.id;
    const capped = await queueOf(KEYED_QUEUES.capped.name);
    const rated = await queueOf(KEYED_QUEUES.rated.name);
    const debounced = await queueOf(KEYED_QUEUES.debounced.name);
    const base = Date.parse("2030-01-01T00:00:00Z");
    /** A succeeded job of `queue` whose attempts were claimed at these offsets from base (ms), all but the last settled by the reaper. */
    const keyedJob = async (queue: string, columns: { flowKey?: string; debounceKey?: string; key?: string; createdAt?: number }, claims: number[], settledAll = false) => {
      const id = crypto.randomUUID();
      await pool.query(
        `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, updated_at, idempotency_key, fencing_token, flow_key, debounce_key, created_at)
         VALUES ($1, $2, $3, 0, 'succeeded', now(), 'http://x', now(), $4, $5, $6, $7, $8)`,
        [id, keyed, queue, columns.key ?? null, claims.length, columns.flowKey ?? null, columns.debounceKey ?? null, new Date(columns.createdAt ?? base)],
      );
      const ids: string[] = [];
      for (const [i, at] of claims.entries()) {
        const status = settledAll || i < claims.length - 1 ? "lease_expired" : "succeeded";
        const r = await pool.query<{ id: string }>(
          `INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, dispatched_at, claimed_at)
           VALUES (gen_random_uuid(), $1, $2, $3::int, $3::int, 1, 1, $4, $5, $5) RETURNING id`,
          [id, keyed, i + 1, status, new Date(base + at)],
        );
        ids.push(r.rows[0]!.id);
      }
      return { id, attemptIds: ids };
    };
    // ck-0: a settled attempt's call beside two live ones (excused); ck-1: three live calls at once (a violation).
    const settledJob = await keyedJob(capped, { flowKey: "ck-0" }, [0], true);
    const live = [await keyedJob(capped, { flowKey: "ck-0" }, [0]), await keyedJob(capped, { flowKey: "ck-0" }, [1])].map((j) => j.attemptIds[0]!);
    const over: string[] = [];
    for (const at of [0, 1, 2]) over.push((await keyedJob(capped, { flowKey: "ck-1" }, [at])).attemptIds[0]!);
    const keyedCall = (flowKey: string, attemptId: string, start: number) => ({ flowKey, attemptId, start, end: 500 });
    // rk-0: claims 5 at once, then one every 200 ms, and an eleventh within that second; rk-1 keeps to its bucket.
    await keyedJob(rated, { flowKey: "rk-0" }, [0, 0, 0, 0, 0, 200, 400, 600, 800, 1_000, 1_000]);
    await keyedJob(rated, { flowKey: "rk-1" }, [0, 0, 0, 0, 0, 200, 400, 600, 800, 1_000]);
    // dt-0: one window of two creates, claimed at its latest due time, which ran the latest payload.
    const window = await keyedJob(debounced, { debounceKey: "dt-0", key: "keyed-debounced-1" }, [1_500]);
    const answer = (seq: number, dueAt: number): DebounceAnswer => ({ key: "dt-0", mode: "trailing", seq, path: `/debounced/dt-0/keyed-debounced-${seq + 1}`, replayed: false, dueAt: base + dueAt });
    const debounceOps: Op[] = [
      { ...op("keyed-debounced-1", "debounced", window.id), debounce: answer(0, 1_000) },
      { ...op("keyed-debounced-2", "debounced", window.id), debounce: answer(1, 1_500) },
    ];
    const sink = {
      keyedCalls: [
        keyedCall("ck-0", settledJob.attemptIds[0]!, 0),
        keyedCall("ck-0", live[0]!, 10),
        keyedCall("ck-0", live[1]!, 20),
        ...over.map((id, i) => keyedCall("ck-1", id, 10 * i)),
      ],
      deliveries: [{ ...delivery("keyed-debounced-1", window.attemptIds[0]!), path: "/debounced/dt-0/keyed-debounced-2" }],
      effects: new Map(),
      webhooks: [],
    } as unknown as ChaosSink;
    const verdict = await checkInvariants({ pool, sink, ops: debounceOps, phases: [phaseRun("p")], quietLagBoundMs: 5_000, leaseTtlMs: 3_000, startLagSlackMs: 4_000, heldDependencies: [] });
    const flow = verdict.violations.filter((v) => v.includes("flow key") || v.includes("debounce"));
    expect(flow.filter((v) => v.startsWith("flow key ck-1: 3 calls at once"))).toHaveLength(1);
    expect(flow.filter((v) => v.startsWith("flow key rk-0: claimed with no token left"))).toHaveLength(1);
    expect(flow.filter((v) => v.startsWith("flow key rk-0: 11 claims within 1000 ms"))).toHaveLength(1);
    expect(flow).toHaveLength(3);
    expect(verdict.flowKeys.capped).toMatchObject({ overlapsExcused: 1, excusedAttempts: [settledJob.attemptIds[0]], settledLeases: 1, violations: 1, maxAtOnce: 3 });
    expect(verdict.flowKeys.rated).toMatchObject({ keys: 2, claims: 21, maxInPeriod: 11, periodBound: 10, overBucket: 1, keysOverPeriodBound: 1 });
    expect(verdict.flowKeys.debounce).toMatchObject({ windows: 1, creates: 2, folded: 1, lost: 0, violations: 0 });
    expect(verdict.rows.find((r) => r.phase === "p")).toMatchObject({ jobs: 1, lost: 0 });
  });
});

describe("flow keys at the downstream", () => {
  const call = (flowKey: string, attemptId: string, start: number, end: number) => ({ flowKey, attemptId, start, end });

  it("finds a key with more calls at once than its cap, and only that", () => {
    const calls = [call("a", "1", 0, 100), call("a", "2", 50, 150), call("a", "3", 100, 200), call("b", "4", 0, 300), call("b", "5", 10, 300)];
    // a: 1 ends when 3 starts, so never 3 at once; b: 2 at once.
    expect(keyCapOverlaps(calls, 2, new Set())).toEqual({ violations: [], excused: 0, excusedAttempts: [], maxAtOnce: 2 });
    const over = keyCapOverlaps([...calls, call("a", "6", 60, 90)], 2, new Set());
    expect(over.violations).toHaveLength(1);
    expect(over.violations[0]).toContain("flow key a: 3 calls at once");
    expect(over.maxAtOnce).toBe(3);
  });

  it("fails a cap exceeded without a settled lease, whatever other attempts' leases did", () => {
    const calls = [call("a", "1", 0, 100), call("a", "2", 10, 100), call("a", "3", 20, 100)];
    // No lease settled, or a settled attempt that is not among the overlapping calls: a violation.
    expect(keyCapOverlaps(calls, 2, new Set()).violations).toHaveLength(1);
    expect(keyCapOverlaps(calls, 2, new Set(["elsewhere"])).violations).toHaveLength(1);
  });

  it("excuses an overlap only while the calls of attempts holding slots fit the cap", () => {
    // "late": a worker frozen past its lease, settled by the reaper, wakes and sends beside two live calls.
    const calls = [call("a", "1", 0, 100), call("a", "2", 10, 100), call("a", "late", 20, 100)];
    expect(keyCapOverlaps(calls, 2, new Set(["late"]))).toEqual({ violations: [], excused: 1, excusedAttempts: ["late"], maxAtOnce: 2 });
    // A settled call among four does not excuse three live ones.
    const four = keyCapOverlaps([...calls, call("a", "4", 30, 100)], 2, new Set(["late"]));
    expect(four.excused).toBe(1);
    expect(four.violations).toHaveLength(1);
    expect(four.violations[0]).toContain("4 calls at once");
    expect(four.violations[0]).toContain("late (lease settled)");
  });

  it("replays a key's token bucket: a burst of the limit, then the limit per period", () => {
    // 5 per second: 5 at once, then one every 200 ms holds; a sixth in the first instant does not.
    const ok = [0, 0, 0, 0, 0, 200, 400, 600, 800, 1_000];
    expect(keyRateExcess(ok, 5, 1_000).over).toEqual([]);
    expect(keyRateExcess([...ok, 1_000], 5, 1_000).over).toEqual([1_000]);
    expect(keyRateExcess([0, 0, 0, 0, 0, 0], 5, 1_000).over).toEqual([0]);
    expect(keyRateExcess([0, 0, 0, 0, 0, 199], 5, 1_000).over).toEqual([]); // 199.5 ms of refill and the burst's rounding
    expect(keyRateExcess([0, 0, 0, 0, 0, 190], 5, 1_000).over).toEqual([190]);
    // After a quiet second the bucket is full again.
    expect(keyRateExcess([0, 0, 0, 0, 0, 2_000, 2_000, 2_000, 2_000, 2_000], 5, 1_000).over).toEqual([]);
  });

  it("grants the refill the database's exact clock may have added to its rounded times", () => {
    // Claims exactly at the rate for a long time with the bucket never full: each claim's refill was measured
    // from the previous claim's time rounded to the millisecond, up to 0.5 ms (0.0025 tokens) more each time,
    // so after 400 such claims the database may have had a whole token more than the rounded times show.
    const steady = [0, 0, 0, 0, 0, ...Array.from({ length: 420 }, (_, i) => 200 * (i + 1))];
    expect(keyRateExcess([...steady, steady.at(-1)!], 5, 1_000).over).toEqual([]);
    // Not two.
    expect(keyRateExcess([...steady, steady.at(-1)!, steady.at(-1)!], 5, 1_000).over).toHaveLength(1);
  });

  it("bounds the claims in any window by the bucket: the burst plus the window's refill", () => {
    expect(tokenBucketWindowBound(5, 1_000, 1_000)).toBe(10);
    expect(tokenBucketWindowBound(1, 1_000, 1_000)).toBe(2);
    expect(tokenBucketWindowBound(10, 1_000, 500)).toBe(15);
    expect(tokenBucketWindowBound(5, 1_000, 0)).toBe(5);
    // The tightest a bucket of 5 per second allows: 5 at once, then one every 200 ms: 10 within [0, 1000].
    const tight = [0, 0, 0, 0, 0, 200, 400, 600, 800, 1_000];
    expect(maxInWindow(tight, 1_000)).toEqual({ count: 10, at: 0 });
    expect(maxInWindow([...tight, 1_000], 1_000).count).toBe(11);
    expect(maxInWindow([0, 1_001, 2_002], 1_000)).toEqual({ count: 1, at: 0 });
    expect(maxInWindow([], 1_000)).toEqual({ count: 0, at: null });
  });
});

describe("debounce windows", () => {
  const trailing: DebounceRule = { key: "t", mode: "trailing", periodMs: 1_000, maxWaitMs: 3_000 };
  const leading: DebounceRule = { key: "l", mode: "leading", periodMs: 1_000 };
  let n = 0;
  /** A create of key `rule.key`, its place `seq`, answered with `jobId` showing `dueAt` (null: a replay). */
  const create = (rule: DebounceRule, seq: number, jobId: string, dueAt: number | null): DebounceCreate => ({
    opKey: `${rule.key}-${seq}`,
    jobId,
    answer: { key: rule.key, mode: rule.mode, seq, path: `/debounced/${rule.key}/${rule.key}-${seq}`, replayed: dueAt === null, dueAt },
  });
  /** A window's job opened by `opener`, created at `createdAt`, with attempts claimed at these times (the last succeeded). */
  const window = (rule: DebounceRule, id: string, opener: number, createdAt: number, claims: number[], status = "succeeded"): DebounceJobFacts => ({
    id,
    debounceKey: rule.key,
    idempotencyKey: `${rule.key}-${opener}`,
    status,
    createdAt,
    attempts: claims.map((claimedAt, i) => ({ id: `${id}-a${i}`, status: i === claims.length - 1 && status === "succeeded" ? "succeeded" : "lease_expired", claimedAt })),
  });
  const ran = (job: DebounceJobFacts, c: DebounceCreate, attempt = job.attempts.length - 1): Delivery => ({
    key: job.idempotencyKey!,
    jobId: job.id,
    attemptId: job.attempts[attempt]!.id,
    fencingToken: attempt + 1,
    path: c.answer.path,
    receivedAt: (n += 1),
    at: n,
    status: 200,
  });
  const judge = (creates: DebounceCreate[], jobs: DebounceJobFacts[], deliveries: Delivery[]) =>
    checkDebounceWindows({
      creates,
      jobs,
      deliveries,
      attemptJob: new Map(jobs.flatMap((j) => j.attempts.map((a) => [a.id, j.id] as [string, string]))),
      rules: [trailing, leading],
      claimToleranceMs: 1_000,
    });

  /** A clean run of both keys: trailing windows folded, one held to its maxWait, and leading windows a period apart. */
  function cleanRun() {
    const t = [
      create(trailing, 0, "T1", 1_000),
      create(trailing, 1, "T1", 1_500), // folded at 500: due 1,500
      create(trailing, 2, "T2", 2_600), // T1 was claimed at 1,500: a new window at 1,600
      create(trailing, 3, "T2", 3_400),
      create(trailing, 4, "T2", 4_200),
      create(trailing, 5, "T2", 4_600), // capped at T2's maxWait (1,600 + 3,000)
      create(trailing, 6, "T3", 5_700), // T2 reached its maxWait at 4,600: a new window at 4,700, T2 still waiting for its claim
    ];
    const tJobs = [window(trailing, "T1", 0, 0, [1_500]), window(trailing, "T2", 2, 1_600, [4_800]), window(trailing, "T3", 6, 4_700, [5_700])];
    const l = [create(leading, 0, "L1", 0), create(leading, 1, "L1", null), create(leading, 2, "L2", 1_200)];
    const lJobs = [window(leading, "L1", 0, 0, [10]), window(leading, "L2", 2, 1_200, [1_210])];
    const deliveries = [ran(tJobs[0]!, t[1]!), ran(tJobs[1]!, t[5]!), ran(tJobs[1]!, t[5]!), ran(tJobs[2]!, t[6]!), ran(lJobs[0]!, l[0]!), ran(lJobs[1]!, l[2]!)];
    return { creates: [...t, ...l], jobs: [...tJobs, ...lJobs], deliveries, t, l, tJobs, lJobs };
  }

  it("passes windows that each ran once with the payload they owed", () => {
    const { creates, jobs, deliveries } = cleanRun();
    const v = judge(creates, jobs, deliveries);
    expect(v.violations).toEqual([]);
    expect(v).toMatchObject({ windows: 5, creates: 10, folded: 5, closedByMaxWait: 1, foldedAfterClaim: 0, minNextWindowAfterClaimMs: 100 });
    expect(v.lost.size).toBe(0);
  });

  it("finds a trailing window that ran an older create's payload, or ran before its latest due time", () => {
    const { creates, jobs, deliveries, t, tJobs } = cleanRun();
    const stale = deliveries.map((d) => (d.attemptId === tJobs[0]!.attempts[0]!.id ? { ...d, path: t[0]!.answer.path } : d));
    const v = judge(creates, jobs, stale);
    expect(v.violations.join("\n")).toContain(`job T1: ran ${t[0]!.answer.path}, not the payload of t-1`);
    expect([...v.lost]).toEqual(["t-1"]);

    const early = jobs.map((j) => (j.id === "T1" ? { ...j, attempts: [{ ...j.attempts[0]!, claimedAt: 1_200 }] } : j));
    expect(judge(creates, early, deliveries).violations.join("\n")).toContain("job T1: claimed 300 ms before the due time its latest create gave it");
  });

  it("finds two windows at once, a window run twice, a due time past maxWait and creates out of order", () => {
    const { creates, jobs, deliveries } = cleanRun();
    // T2 opened at 1,600 although T1 waited for its claim until 3,000: two windows at once.
    const late = jobs.map((j) => (j.id === "T1" ? { ...j, attempts: [{ ...j.attempts[0]!, claimedAt: 3_000 }] } : j));
    expect(judge(creates, late, deliveries).violations.join("\n")).toContain("job T2: opened 1400 ms before the job of the window before it (T1) was claimed");

    const twice = jobs.map((j) => (j.id === "T3" ? { ...j, attempts: [{ id: "T3-a0", status: "succeeded", claimedAt: 5_700 }, { id: "T3-a1", status: "succeeded", claimedAt: 5_900 }] } : j));
    const v = judge(creates, twice, deliveries);
    expect(v.violations.join("\n")).toContain("job T3: ended succeeded with 2 successful attempts");
    expect(v.lost.has("t-6")).toBe(true);

    const pastMax = creates.map((c) => (c.opKey === "t-5" ? { ...c, answer: { ...c.answer, dueAt: 4_700 } } : c));
    expect(judge(pastMax, jobs, deliveries).violations.join("\n")).toContain("job T2: create t-5 made it due 3100 ms after the window opened");

    // t-4 answered with T1 after t-2 and t-3 had gone to T2: back to an earlier window.
    const backwards = creates.map((c) => (c.opKey === "t-4" ? { ...c, jobId: "T1" } : c));
    expect(judge(backwards, jobs, deliveries).violations.join("\n")).toContain("job T2: create t-4 (#4) went to the window before this one (T1) after create t-2 (#2) had gone to this one");
  });

  it("finds a leading window opened within the period of the one before, and one that ran another payload", () => {
    const { creates, jobs, deliveries, l } = cleanRun();
    const soon = jobs.map((j) => (j.id === "L2" ? { ...j, createdAt: 900 } : j));
    expect(judge(creates, soon, deliveries).violations.join("\n")).toContain("job L2: opened 900 ms after the window before it (L1), within its period of 1000 ms");
    const changed = deliveries.map((d) => (d.path === l[0]!.answer.path ? { ...d, path: `/debounced/l/l-1` } : d));
    const v = judge(creates, jobs, changed);
    expect(v.violations.join("\n")).toContain("job L1: ran /debounced/l/l-1, not the payload of l-0");
    expect(v.lost.has("l-0")).toBe(true);
  });

  it("finds a create answered with a job that does not exist or belongs to another key, and an effect from another job", () => {
    const { creates, jobs, deliveries, tJobs } = cleanRun();
    const v = judge([...creates, create(trailing, 7, "nowhere", 9_000), { ...create(trailing, 8, "L2", 9_000) }], jobs, [...deliveries, { ...ran(tJobs[2]!, creates[6]!), attemptId: "L2-a0" }]);
    const text = v.violations.join("\n");
    expect(text).toContain("create t-7 was answered with job nowhere, which does not exist");
    expect(text).toContain("create t-8 was answered with job L2 of debounce key l");
    expect(text).toContain("job T3: an effect under its Idempotency-Key came from job L2");
    expect(v.lost.has("t-7") && v.lost.has("t-8")).toBe(true);
  });

  it("a create folded into a job after its first claim (back in scheduled to retry) is a violation", () => {
    const { creates, jobs, deliveries, t } = cleanRun();
    // T3's first attempt lost its lease (claimed at 5,700); back in scheduled, it took t-7 (due 7,500) and ran it.
    const retried = jobs.map((j) => (j.id === "T3" ? window(trailing, "T3", 6, 4_700, [5_700, 7_500]) : j));
    const t7 = create(trailing, 7, "T3", 7_500);
    const v = judge([...creates, t7], retried, [...deliveries.filter((d) => !d.attemptId.startsWith("T3")), ran(retried[2]!, t[6]!, 0), ran(retried[2]!, t7, 1)]);
    expect(v.violations).toEqual(["debounce t (trailing): job T3: create t-7 was folded into it 1800 ms after its first claim (a job claimed once takes no fold)"]);
    expect(v.foldedAfterClaim).toBe(1);
  });
});
