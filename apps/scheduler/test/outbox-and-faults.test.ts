import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTcpProxy, waitFor, type TcpProxy } from "@tick/testing";
import { FaultInjected } from "@tick/runtime";
import { ATTEMPT_QUEUE, attemptsOfMessage } from "@tick/core";
import { sql } from "@tick/db";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { createWorld, statusCounts, type World } from "./harness.js";

let w: World;
let proxy: TcpProxy | undefined;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w?.close();
  await proxy?.close();
  proxy = undefined;
});

const unpublished = async (w: World) =>
  (await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`)).rows[0]!.n;

type TestScheduler = ReturnType<World["startScheduler"]>;

/** Three jobs of a new tenant dispatched and published by `s` (one chunk message); their attempt IDs, in order. */
async function publishThree(s: TestScheduler): Promise<string[]> {
  await s.init();
  await s.leaseTick();
  await w.insertJobs(await w.createTenant(), 3);
  await s.dispatchOnce();
  return (await w.pool.query<{ id: string }>(`SELECT id FROM attempts ORDER BY id`)).rows.map((r) => r.id);
}

/** Makes every attempt look published long enough ago for the reaper to ask the broker about it. */
const ageAttempts = () => w.pool.query(`UPDATE attempts SET dispatched_at = now() - interval '3 seconds'`);

/** The attempt IDs carried by the messages in these broker states. */
async function carriedAttempts(states: ("waiting" | "prioritized" | "delayed")[] = ["waiting", "prioritized"]): Promise<string[]> {
  const messages = await w.attemptsQueue.getJobs(states);
  return messages.flatMap((m) => attemptsOfMessage(m.data).map((a) => (a as { attemptId: string }).attemptId)).sort();
}

/** A worker takes `count` messages and fails them before starting anything (its Postgres is unreachable). */
async function failWithoutStarting(count: number): Promise<void> {
  const connection = new Redis(w.redis.url, { maxRetriesPerRequest: null });
  const failing = new Worker(ATTEMPT_QUEUE, async () => { throw new Error("connect ECONNREFUSED"); }, { connection, prefix: `${w.redis.prefix}:bull` });
  try {
    await waitFor(async () => (await w.attemptsQueue.getFailedCount()) === count, { description: "messages failed by the worker" });
  } finally {
    await failing.close();
    await connection.quit();
  }
}

describe("dispatch publication and the outbox relay", () => {
  it("with the broker unreachable, the claims stay pending in Postgres, nothing is lost, and they are all published once it is back", async () => {
    const redisUrl = new URL(w.redis.url);
    proxy = await startTcpProxy({ targetHost: redisUrl.hostname, targetPort: Number(redisUrl.port || 6379) });
    const s = w.startScheduler("s", {}, { redisUrl: proxy.url(w.redis.url) });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 40);

    proxy.cut();
    // The claims commit; their publish fails (timed out): counted, and the attempts stay pending.
    expect(await s.dispatchOnce()).toBe(40);
    const failures = await s.metrics.publishFailures.get();
    expect(failures.values[0]?.value ?? 0).toBeGreaterThanOrEqual(1);
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 40 });

    proxy.restore();
    await ageAttempts();
    await waitFor(
      async () => {
        await s.reapOnce();
        await s.relayOnce();
        return (await unpublished(w)) === 0 && new Set(await carriedAttempts()).size === 40;
      },
      { timeoutMs: 45_000, intervalMs: 200, description: "every claim published after the broker came back" },
    );
    // Every attempt is in a message (the timed-out chunk may still have landed late: a second copy of an
    // attempt is discarded by the worker's start, S5).
    const attempts = (await w.pool.query<{ id: string }>(`SELECT id FROM attempts ORDER BY id`)).rows.map((r) => r.id);
    expect([...new Set(await carriedAttempts())]).toEqual(attempts);
  });

  it("a relay crash after publish but before marking re-publishes the same message IDs, which the broker treats as duplicates", async () => {
    // Outbox rows for dispatch are re-publishes now: made here by a dispatch whose own publish never happened.
    const s = w.startScheduler("s", {}, { faults: "dispatch.after-commit:throw,relay.after-publish-before-mark:throw" });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 10);
    await expect(s.dispatchOnce()).rejects.toBeInstanceOf(FaultInjected);
    await ageAttempts();
    await s.reapOnce();
    expect(await unpublished(w)).toBe(10);
    await expect(s.relayOnce()).rejects.toBeInstanceOf(FaultInjected);
    expect(await unpublished(w)).toBe(10); // the mark rolled back with the "crash"
    expect(await w.attemptsQueue.count()).toBe(10); // but the messages went out
    expect(await s.relayOnce()).toBe(10); // published again ...
    expect(await unpublished(w)).toBe(0);
    expect(await w.attemptsQueue.count()).toBe(10); // ... and still one message per attempt ID
  });

  it("a crash after the claim commits but before publishing strands nothing: the pending attempts are re-published at the next reaper round", async () => {
    const s = w.startScheduler("s", {}, { faults: "dispatch.after-commit:throw" });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 10);
    await expect(s.dispatchOnce()).rejects.toBeInstanceOf(FaultInjected);
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 10 });
    expect(await w.attemptsQueue.count()).toBe(0);
    await ageAttempts();
    await s.reapOnce();
    expect(await s.relayOnce()).toBe(10);
    expect(await w.attemptsQueue.count()).toBe(10);
    const attempts = (await w.pool.query<{ id: string }>(`SELECT id FROM attempts ORDER BY id`)).rows.map((r) => r.id);
    expect(await carriedAttempts()).toEqual(attempts);
  });

  it("a crash before the claim commits leaves the jobs scheduled for the next round", async () => {
    const s = w.startScheduler("s", {}, { faults: "dispatch.before-commit:throw" });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 10);
    await expect(s.dispatchOnce()).rejects.toBeInstanceOf(FaultInjected);
    expect(await statusCounts(w.pool)).toEqual({ scheduled: 10 });
    expect((await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox`)).rows[0]!.n).toBe(0);
    expect(await s.dispatchOnce()).toBe(10);
  });
});

describe("reaper", () => {
  it("Redis flushed mid-run: messages lost with it are re-published under the same attempt IDs, no job lost", async () => {
    const s = w.startScheduler("s", { strandedAfterMs: 200 });
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 30);
    await s.dispatchOnce();
    const before = await carriedAttempts();
    expect(before).toHaveLength(30);

    // Lose every broker message (a flush of this test's keys).
    await w.redis.cleanup();
    expect(await w.attemptsQueue.count()).toBe(0);

    await waitFor(
      async () => {
        await s.reapOnce();
        await s.relayOnce();
        return (await w.attemptsQueue.count()) === 30;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: "stranded attempts re-published" },
    );
    // One message per lost attempt, under its attempt ID.
    const after = (await w.attemptsQueue.getJobs(["waiting", "prioritized"])).map((j) => j.id).sort();
    expect(after).toEqual(before);
    expect(await carriedAttempts()).toEqual(before);
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 30 });
    const attempts = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts`);
    expect(attempts.rows[0]!.n).toBe(30);
  });

  it("a message consumed without starting its attempts (the worker could not reach Postgres) is re-published under new message IDs, once", async () => {
    const s = w.startScheduler("s", { strandedAfterMs: 200 });
    const attemptIds = await publishThree(s);

    // A worker takes the chunk and fails it before starting anything (its Postgres is unreachable).
    await failWithoutStarting(1);

    // The same ID would be a no-op for as long as BullMQ keeps the failed message: a new one goes out.
    await waitFor(
      async () => {
        await s.reapOnce();
        await s.relayOnce();
        return (await w.attemptsQueue.getWaitingCount()) + (await w.attemptsQueue.getPrioritizedCount()) === 3;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: "stranded attempts re-published" },
    );
    // The chunk's ID was the only one used: each attempt goes out alone under its own ID.
    const waiting = async () => (await w.attemptsQueue.getJobs(["waiting", "prioritized"])).map((j) => j.id).sort();
    expect(await waiting()).toEqual([...attemptIds].sort());

    // Stranded again while that message still waits: its ID is reused (a no-op), not a third copy.
    await new Promise((r) => setTimeout(r, 300));
    await s.reapOnce();
    await s.relayOnce();
    expect((await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'dispatch'`)).rows[0]!.n).toBe(6);
    expect(await waiting()).toEqual([...attemptIds].sort());
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 3 });
  });

  it("a message consumed without a start is re-published at the next reaper round, not after SCHEDULER_STRANDED_AFTER; a waiting one is left alone", async () => {
    const s = w.startScheduler("s"); // strandedAfterMs 60 s: only the broker lookup can be this prompt
    const attemptIds = await publishThree(s);
    const outboxRows = async () => (await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE kind = 'dispatch'`)).rows[0]!.n;
    // Published long enough ago to be looked up; the chunk still waits: nothing to re-publish.
    await ageAttempts();
    await s.reapOnce();
    expect(await outboxRows()).toBe(0);

    await failWithoutStarting(1);
    await ageAttempts();
    await s.reapOnce();
    await s.relayOnce();
    expect((await w.attemptsQueue.getJobs(["waiting", "prioritized"])).map((j) => j.id).sort()).toEqual([...attemptIds].sort());
    // The re-publish restarted the clock: the next round looks them up again only 2 s later.
    await s.reapOnce();
    expect(await outboxRows()).toBe(3);
    // Consumed without a start once more: now under the next ID of each attempt's own.
    await failWithoutStarting(4);
    await ageAttempts();
    await s.reapOnce();
    await s.relayOnce();
    expect((await w.attemptsQueue.getJobs(["waiting", "prioritized"])).map((j) => j.id).sort()).toEqual(attemptIds.map((id) => `${id}-r1`).sort());
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 3 });
  });

  it("a running attempt whose lease expired is lost; the job retries with a new attempt ID and a higher fencing token, then dead-letters when attempts run out", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 1);
    await w.pool.query(`UPDATE jobs SET max_attempts = 2, backoff = '{"strategy":"fixed","baseMs":0,"maxMs":0,"jitter":"none"}'`);

    for (let attempt = 1; attempt <= 2; attempt++) {
      expect(await s.dispatchOnce()).toBe(1);
      // What a worker does when it starts, with a lease that is already over.
      await w.pool.query(
        `UPDATE attempts SET status = 'running', started_at = now(), worker_id = 'w', lease_expires_at = now() - interval '1 second' WHERE status = 'pending'`,
      );
      await w.pool.query(`UPDATE jobs SET status = 'running', version = version + 1, attempt_count = attempt_count + 1`);
      await s.reapOnce();
    }
    const job = (await w.pool.query<{ status: string; attempt_count: number; token: number; last_error: { kind: string } }>(`SELECT status, attempt_count, fencing_token::int AS token, last_error FROM jobs`)).rows[0];
    expect(job).toMatchObject({ status: "dead", attempt_count: 2, token: 2 });
    expect(job?.last_error.kind).toBe("lease_expired");
    const attempts = (await w.pool.query<{ id: string; status: string; token: number }>(`SELECT id, status, fencing_token::int AS token FROM attempts ORDER BY fencing_token`)).rows;
    expect(attempts.map((a) => [a.status, a.token])).toEqual([
      ["lease_expired", 1],
      ["lease_expired", 2],
    ]);
    expect(new Set(attempts.map((a) => a.id)).size).toBe(2);
  });

  it("the reaper settles a batch of lost attempts in one statement, each row on its own conditions (version, current attempt, lease still expired)", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    await w.insertJobs(t, 5);
    expect(await s.dispatchOnce()).toBe(5);
    await w.pool.query(`UPDATE attempts SET status = 'running', started_at = now(), worker_id = 'w', lease_expires_at = now() - interval '1 minute'`);
    await w.pool.query(`UPDATE jobs SET status = 'running', version = version + 1, attempt_count = 1`);
    const client = await w.pool.connect();
    try {
      await client.query("BEGIN");
      const lost = await sql.lockExpiredLeases(client, t.shard, 0, 10);
      expect(lost).toHaveLength(5);
      const [retry, dead, staleVersion, renewed, notCurrent] = lost as [sql.ExpiredLease, ...sql.ExpiredLease[]];
      await client.query(`UPDATE attempts SET lease_expires_at = now() + interval '1 minute' WHERE id = $1`, [renewed!.attempt_id]);
      await client.query(`UPDATE jobs SET current_attempt_id = NULL WHERE id = $1`, [notCurrent!.job_id]);
      const settled = await sql.settleExpiredLeases(
        client,
        [
          { lease: retry, decision: { kind: "retry", dueInMs: 60_000 } },
          { lease: dead!, decision: { kind: "dead" } },
          { lease: { ...staleVersion!, job_version: staleVersion!.job_version - 1 }, decision: { kind: "dead" } },
          { lease: renewed!, decision: { kind: "dead" } },
          { lease: notCurrent!, decision: { kind: "dead" } },
        ],
        0,
      );
      await client.query("COMMIT");
      expect([...settled].sort()).toEqual([retry.job_id, dead!.job_id].sort());
      const jobs = new Map((await w.pool.query<{ id: string; status: string; later: boolean }>(`SELECT id, status, due_at > now() + interval '30 seconds' AS later FROM jobs`)).rows.map((r) => [r.id, r]));
      expect(jobs.get(retry.job_id)).toMatchObject({ status: "scheduled", later: true });
      expect(jobs.get(dead!.job_id)?.status).toBe("dead");
      for (const l of [staleVersion!, renewed!, notCurrent!]) expect(jobs.get(l.job_id)?.status).toBe("running");
      const attempts = new Map((await w.pool.query<{ id: string; status: string }>(`SELECT id, status FROM attempts`)).rows.map((r) => [r.id, r.status]));
      expect([retry, dead!].map((l) => attempts.get(l.attempt_id))).toEqual(["lease_expired", "lease_expired"]);
      expect([staleVersion!, renewed!, notCurrent!].map((l) => attempts.get(l.attempt_id))).toEqual(["running", "running", "running"]);
    } finally {
      client.release();
    }
  });
});
