import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { ATTEMPT_QUEUE } from "@tick/core";
import { sql } from "@tick/db";
import { waitFor, type Sink } from "@tick/testing";
import { metricValue, type ProcessWorld, useProcessWorld } from "./harness.js";

let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

/** The process state letter from /proc (T: stopped by a signal). */
const processState = (pid: number) => readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0];

const settled = (w: ProcessWorld, id: string, status: string, timeoutMs = 30_000) =>
  waitFor(async () => (await w.job(id)).status === status, { timeoutMs, description: `job ${id} ${status}` });

describe("execution (real scheduler and worker processes, a recording sink)", () => {
  it("runs a job once with its idempotency key, attempt ID and fencing token, then retries a 503 and dead-letters a 400", async () => {
    await w.startScheduler();
    await w.startWorker();
    const t = await w.createTenant();
    sink.respond((req) => (req.path === "/flaky" ? { status: sink.requests.filter((r) => r.path === "/flaky").length === 1 ? 503 : 200 } : req.path === "/bad" ? { status: 400 } : undefined));

    const ok = await w.createJob(t, sink.url("/ok"), { idempotencyKey: "order-7" });
    const flaky = await w.createJob(t, sink.url("/flaky"));
    const bad = await w.createJob(t, sink.url("/bad"));
    await settled(w, ok, "succeeded");
    await settled(w, flaky, "succeeded");
    await settled(w, bad, "dead");

    const okCalls = sink.requests.filter((r) => r.path === "/ok");
    expect(okCalls).toHaveLength(1);
    const [okAttempt] = await w.attempts(ok);
    expect(okCalls[0]).toMatchObject({ idempotencyKey: "order-7", attemptId: okAttempt!.id, attemptNumber: "1", fencingToken: "1" });

    const flakyCalls = sink.requests.filter((r) => r.path === "/flaky");
    expect(flakyCalls).toHaveLength(2);
    expect(flakyCalls[0]!.idempotencyKey).toBe(`tick-job-${flaky}`);
    expect(flakyCalls[1]!.idempotencyKey).toBe(flakyCalls[0]!.idempotencyKey);
    expect(flakyCalls[1]!.attemptId).not.toBe(flakyCalls[0]!.attemptId);
    expect(flakyCalls.map((c) => c.fencingToken)).toEqual(["1", "2"]);
    expect((await w.attempts(flaky)).map((a) => a.status)).toEqual(["failed", "succeeded"]);

    expect(sink.requests.filter((r) => r.path === "/bad")).toHaveLength(1);
    expect((await w.job(bad)).attempt_count).toBe(1);
  });

  it("a worker killed mid-attempt: after the lease expires the job runs again with a new attempt ID and the same key, and succeeds once", async () => {
    await w.startScheduler();
    const victim = await w.startWorker();
    const t = await w.createTenant();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.respond((_req, index) => (index === 0 ? { status: 200, hold: held } : { status: 200 }));
    const id = await w.createJob(t, sink.url("/charge"), { idempotencyKey: "charge-42" });
    await waitFor(() => sink.requests.length === 1, { description: "first attempt reached the sink" });
    victim.child.kill("SIGKILL");
    await victim.exited;
    release();
    await w.startWorker();
    await settled(w, id, "succeeded");
    expect(sink.requests).toHaveLength(2);
    expect(sink.requests.map((r) => r.idempotencyKey)).toEqual(["charge-42", "charge-42"]);
    expect(sink.requests[1]!.attemptId).not.toBe(sink.requests[0]!.attemptId);
    expect((await w.attempts(id)).map((a) => [a.status, a.fencing_token])).toEqual([
      ["lease_expired", "1"],
      ["succeeded", "2"],
    ]);
  });

  it("a worker frozen past its lease: its late completion is refused and the job's state comes from the newer attempt", async () => {
    await w.startScheduler();
    const frozen = await w.startWorker();
    const t = await w.createTenant();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.respond((_req, index) => (index === 0 ? { status: 200, hold: held } : { status: 500 }));
    const id = await w.createJob(t, sink.url("/x"), { maxAttempts: 2 });
    await waitFor(() => sink.requests.length === 1, { description: "first attempt reached the sink" });
    frozen.child.kill("SIGSTOP");
    // The lease (1.5 s) runs out; the reaper retries; a second worker runs attempt 2, which fails for good.
    const other = await w.startWorker();
    await settled(w, id, "dead");
    release(); // the frozen worker's call now "succeeds" ...
    frozen.child.kill("SIGCONT");
    await waitFor(async () => (await metricValue(frozen.healthPort, "tick_late_completions_total")) + (await metricValue(frozen.healthPort, "tick_attempt_leases_lost_total")) >= 1, {
      timeoutMs: 15_000,
      description: "the resumed worker noticed it lost the lease",
    });
    // ... but the job keeps the newer attempt's outcome.
    expect((await w.job(id)).status).toBe("dead");
    const attempts = await w.attempts(id);
    expect(attempts.map((a) => a.status)).toEqual(["lease_expired", "failed"]);
    expect(await metricValue(other.healthPort, "tick_late_completions_total")).toBe(0);
  });

  it("a worker frozen past its lease right before the send does not send when it resumes: attempt 2 ran elsewhere, attempt 1's request never goes out", async () => {
    await w.startScheduler();
    // The worker stops itself (SIGSTOP) holding attempt 1, after the start and before the send.
    const frozen = await w.startWorker({ TICK_FAULT_POINTS: "worker.before-send:stop" });
    const t = await w.createTenant();
    const id = await w.createJob(t, sink.url("/once"), { maxAttempts: 3 });
    await waitFor(async () => processState(frozen.child.pid!) === "T" && (await w.job(id)).status === "running", {
      description: "the worker stopped itself holding attempt 1",
    });
    // Its lease (1.5 s) runs out; the reaper retries; a second worker sends attempt 2.
    await w.startWorker();
    await settled(w, id, "succeeded");
    expect(sink.requests.map((r) => r.attemptNumber)).toEqual(["2"]);
    frozen.child.kill("SIGCONT");
    await waitFor(async () => (await metricValue(frozen.healthPort, "tick_attempt_sends_withheld_total")) === 1, {
      timeoutMs: 15_000,
      description: "the resumed worker gave attempt 1 up before sending",
    });
    // Attempt 1's request never went out: the target saw one request, from attempt 2.
    expect(sink.requests.map((r) => r.attemptNumber)).toEqual(["2"]);
    expect(await metricValue(frozen.healthPort, "tick_late_completions_total")).toBe(0);
    expect((await w.attempts(id)).map((a) => a.status)).toEqual(["lease_expired", "succeeded"]);
  });

  it("cancel right after dispatch: the worker discards the message and the sink never sees the job", async () => {
    await w.startScheduler();
    const t = await w.createTenant();
    const id = await w.createJob(t, sink.url("/never"));
    // Dispatched, and its message in the broker (published right after the claim commits).
    const broker = new Redis(w.redis.url);
    try {
      await waitFor(
        async () =>
          (await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts WHERE job_id = $1 AND status = 'pending'`, [id])).rows[0]?.n === 1 &&
          (await broker.zcard(`${w.redis.prefix}:bull:${ATTEMPT_QUEUE}:prioritized`)) === 1,
        { description: "dispatched and published" },
      );
    } finally {
      broker.disconnect();
    }
    expect((await sql.cancelJobBeforeStart(w.pool, t.id, id))?.status).toBe("cancelled");
    const worker = await w.startWorker();
    await waitFor(async () => (await metricValue(worker.healthPort, 'tick_messages_discarded_total{reason="cancelled"')) === 1, {
      description: "message discarded as cancelled",
    });
    expect(sink.requests).toHaveLength(0);
    expect((await w.attempts(id)).map((a) => a.status)).toEqual(["discarded"]);
  });
});

describe("completion fencing (S7)", () => {
  it("refuses a completion carrying an old fencing token and counts it as a duplicate signal", async () => {
    const t = await w.createTenant();
    const id = await w.createJob(t, sink.url("/y"));
    // Attempt 1 started, then taken over: attempt 2 (token 2) is now running.
    await w.pool.query(`INSERT INTO shard_leases (shard, holder, epoch, expires_at) VALUES ($1, 'x', 1, now() + interval '1 hour')`, [t.shard]);
    const claim1 = await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 1 });
    const first = (await sql.startAttempt(w.pool, { attemptId: claim1[0]!.attempt_id, jobId: id, version: claim1[0]!.version, workerId: "a", leaseMs: 1 })) as sql.StartedAttempt;
    await w.pool.query(`UPDATE attempts SET status = 'lease_expired' WHERE id = $1`, [claim1[0]!.attempt_id]);
    await w.pool.query(`UPDATE jobs SET status = 'scheduled', version = version + 1, current_attempt_id = NULL WHERE id = $1`, [id]);
    const claim2 = await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 1 });
    const second = (await sql.startAttempt(w.pool, { attemptId: claim2[0]!.attempt_id, jobId: id, version: claim2[0]!.version, workerId: "b", leaseMs: 60_000 })) as sql.StartedAttempt;
    expect(second.fencing_token).toBe("2");

    const late = (await sql.completeAttempts(w.pool, [{
      attemptId: claim1[0]!.attempt_id, jobId: id, version: first.version, fencingToken: first.fencing_token,
      outcome: "success", decision: { kind: "succeeded" }, httpStatus: 200, error: null, result: { late: true }, durationMs: 5,
    }]))[0]!;
    expect(late.won).toBe(false);
    const current = (await sql.completeAttempts(w.pool, [{
      attemptId: claim2[0]!.attempt_id, jobId: id, version: second.version, fencingToken: second.fencing_token,
      outcome: "success", decision: { kind: "succeeded" }, httpStatus: 200, error: null, result: { current: true }, durationMs: 5,
    }]))[0]!;
    expect(current.won).toBe(true);
    const job = (await w.pool.query<{ status: string; result: unknown }>(`SELECT status, result FROM jobs WHERE id = $1`, [id])).rows[0];
    expect(job).toEqual({ status: "succeeded", result: { current: true } });
    const attempts = await w.attempts(id);
    expect(attempts.map((a) => [a.status, a.late_completions])).toEqual([
      ["lease_expired", 1],
      ["succeeded", 0],
    ]);
  });

  it("a job whose cancel was recorded while its last attempt ran ends cancelled, not dead, when the attempt fails, with its job.cancelled webhook", async () => {
    const t = await w.createTenant();
    const id = await w.createJob(t, sink.url("/last"), { maxAttempts: 1, callbackUrl: sink.url("/done") });
    await w.pool.query(`INSERT INTO shard_leases (shard, holder, epoch, expires_at) VALUES ($1, 'x', 1, now() + interval '1 hour')`, [t.shard]);
    const [claim] = await sql.claimDueJobs(w.pool, { shard: t.shard, epoch: "1", tenantId: t.id, limit: 1 });
    const run = (await sql.startAttempt(w.pool, { attemptId: claim!.attempt_id, jobId: id, version: claim!.version, workerId: "a", leaseMs: 60_000 })) as sql.StartedAttempt;
    expect((await sql.requestCancelOfRunningJob(w.pool, t.id, id))?.first_request).toBe(true);
    const [ended] = await sql.completeAttempts(w.pool, [
      {
        attemptId: claim!.attempt_id, jobId: id, version: run.version, fencingToken: run.fencing_token,
        outcome: "retryable", decision: { kind: "dead" }, httpStatus: 503, error: { kind: "retryable", status: 503 }, result: null, durationMs: 5,
      },
    ]);
    expect(ended).toMatchObject({ won: true, status: "cancelled" });
    const events = (await w.pool.query<{ event: string }>(`SELECT event FROM webhook_deliveries WHERE job_id = $1`, [id])).rows.map((r) => r.event);
    expect(events).toEqual(["job.cancelled"]);
  });

  it("decides retry versus expiry by the database clock, not the worker's (a worker clock a day ahead still retries)", async () => {
    await w.startScheduler();
    await w.startWorker({ TICK_TEST_CLOCK_SKEW_MS: String(24 * 3_600_000) });
    const t = await w.createTenant();
    sink.respond((_req, index) => ({ status: index === 0 ? 503 : 200 }));
    // Expires in an hour: a worker trusting its own clock would think the retry lands past it and expire the job.
    const id = await w.createJob(t, sink.url("/skewed"), { expiresInMs: 3_600_000 });
    await settled(w, id, "succeeded");
    expect((await w.attempts(id)).map((a) => a.status)).toEqual(["failed", "succeeded"]);
  });
});

