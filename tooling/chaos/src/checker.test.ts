import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createTestDatabase, testServerUrl, type TestDatabase } from "@tick/db/testing";
import { checkInvariants, keyCapOverlaps, keyRateExcess } from "./checker.js";
import type { ChaosSink, Delivery } from "./sink.js";
import type { Op, OpKind } from "./workload.js";

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
const delivery = (key: string, attemptId: string, status = 200): Delivery => ({ key, attemptId, fencingToken: 1, path: "/ok", at: Date.now(), status });

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

describe("flow keys at the downstream", () => {
  const call = (flowKey: string, attemptId: string, start: number, end: number) => ({ flowKey, attemptId, start, end });

  it("finds a key with more calls at once than its cap, and only that", () => {
    const calls = [call("a", "1", 0, 100), call("a", "2", 50, 150), call("a", "3", 100, 200), call("b", "4", 0, 300), call("b", "5", 10, 300)];
    // a: 1 ends when 3 starts, so never 3 at once; b: 2 at once.
    expect(keyCapOverlaps(calls, 2, new Set())).toEqual({ violations: [], excused: 0 });
    const over = keyCapOverlaps([...calls, call("a", "6", 60, 90)], 2, new Set());
    expect(over.violations).toHaveLength(1);
    expect(over.violations[0]).toContain("flow key a: 3 calls at once");
  });

  it("excuses an overlap only when one of the calls is a settled lease's", () => {
    const calls = [call("a", "1", 0, 100), call("a", "2", 10, 100), call("a", "late", 20, 100)];
    expect(keyCapOverlaps(calls, 2, new Set(["late"]))).toEqual({ violations: [], excused: 1 });
    expect(keyCapOverlaps(calls, 2, new Set(["other"])).violations).toHaveLength(1);
  });

  it("replays a key's token bucket: a burst of the limit, then the limit per period", () => {
    // 5 per second: 5 at once, then one every 200 ms holds; a sixth in the first instant does not.
    const ok = [0, 0, 0, 0, 0, 200, 400, 600, 800, 1_000];
    expect(keyRateExcess(ok, 5, 1_000).over).toEqual([]);
    expect(keyRateExcess([...ok, 1_000], 5, 1_000).over).toEqual([1_000]);
    expect(keyRateExcess([0, 0, 0, 0, 0, 0], 5, 1_000).over).toEqual([0]);
    // After a quiet second the bucket is full again.
    expect(keyRateExcess([0, 0, 0, 0, 0, 2_000, 2_000, 2_000, 2_000, 2_000], 5, 1_000).over).toEqual([]);
  });
});
