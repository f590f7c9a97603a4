import { describe, expect, it } from "vitest";
import { dependencyOf } from "@tick/core";
import { sql } from "@tick/db";
import { waitFor, type Sink } from "@tick/testing";
import { metricValue, type ProcessWorld, useProcessWorld } from "./harness.js";

// DLQ replay end to end (S17): real scheduler and worker processes, a recording sink. The jobs die
// for real (their target fails, one attempt each), then a replay brings them back.

let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

type Tenant = Awaited<ReturnType<ProcessWorld["createTenant"]>>;

/** `n` jobs with idempotency keys and a single attempt each, created as the API would, due now. */
async function createJobs(t: Tenant, n: number, url: string): Promise<void> {
  for (let offset = 0; offset < n; offset += 500) {
    const batch = Array.from({ length: Math.min(500, n - offset) }, (_, i) => ({
      id: crypto.randomUUID(),
      queue_id: t.queueId,
      run_at: null,
      delay_ms: 0,
      expires_at: null,
      priority: (offset + i) % 3,
      idempotency_key: `order-${offset + i}`,
      request_hash: "test",
      method: "POST",
      url,
      headers: {},
      body: "{}",
      timeout_ms: 10_000,
      max_attempts: 1,
      backoff: { strategy: "fixed" as const, baseMs: 100, maxMs: 100, jitter: "none" as const },
      dependency_key: dependencyOf(url, null),
      callback_url: null,
      metadata: {},
    }));
    await sql.insertJobs(w.pool, t, batch, 86_400_000);
  }
}

const count = async (status: string) => (await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM history.jobs_all WHERE status = $1`, [status])).rows[0]!.n;
const replayRow = async (id: string) => (await w.pool.query<sql.ReplayRow>(`SELECT * FROM dlq_replays WHERE id = $1`, [id])).rows[0]!;

function startReplay(t: Tenant, ratePerSecond: number, failureWindow = 20) {
  return sql.createReplay(w.pool, {
    tenantId: t.id,
    shard: t.shard,
    actor: "user:operator",
    filter: {},
    selection: { match: {}, jobIds: null },
    ratePerSecond,
    failureThreshold: 0.5,
    failureWindow,
    attempts: 1,
    maxJobs: 100_000,
  });
}

/** Most events inside any window of `windowMs` (sorted times). */
function maxInWindow(times: number[], windowMs: number): number {
  let best = 0;
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= windowMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}

describe("DLQ replay (real processes)", () => {
  it(
    "replays 600 dead jobs at 20/s: never faster than the rate, highest priority first, same idempotency keys, new attempt IDs, and it completes",
    async () => {
      const rate = 20;
      const n = 600;
      await w.startScheduler();
      // The breaker would hold the first failures' dependency; here the jobs are meant to die fast.
      const worker = await w.startWorker({ BREAKER_MIN_REQUESTS: "1000000" });
      const t = await w.createTenant();
      let healthy = false;
      sink.respond(() => ({ status: healthy ? 200 : 503 }));
      await createJobs(t, n, sink.url("/orders"));
      await waitFor(async () => (await count("dead")) === n, { timeoutMs: 90_000, description: "all jobs dead" });
      expect(sink.requests).toHaveLength(n);

      healthy = true; // the root cause is fixed
      const replay = (await startReplay(t, rate))!;
      expect(replay.total).toBe(n);
      await waitFor(async () => (await replayRow(replay.id)).status === "completed", { timeoutMs: 200_000, intervalMs: 1_000, description: "replay completed" });

      expect(await replayRow(replay.id)).toMatchObject({ released: n, succeeded: n, failed: 0, skipped: 0 });
      expect(await count("succeeded")).toBe(n);

      // Each job: two calls, one key, two attempt IDs.
      expect(sink.requests).toHaveLength(2 * n);
      const byKey = new Map<string, string[]>();
      for (const r of sink.requests) byKey.set(r.idempotencyKey!, [...(byKey.get(r.idempotencyKey!) ?? []), r.attemptId!]);
      expect(byKey.size).toBe(n);
      expect([...byKey.values()].every((ids) => ids.length === 2 && ids[0] !== ids[1])).toBe(true);
      // Every start is in the scheduling lag metric: the first attempts (batched starts) and the replayed ones
      // (started one at a time, at the replay's start gate).
      expect(await metricValue(worker.healthPort, "tick_scheduling_lag_seconds_count")).toBe(2 * n);

      // The replayed attempts, measured where the work starts.
      const { rows } = await w.pool.query<{ started_ms: number; due_ms: number }>(
        `SELECT (extract(epoch FROM a.started_at) * 1000)::float8 AS started_ms, (extract(epoch FROM j.due_at) * 1000)::float8 AS due_ms
           FROM history.attempts_all a JOIN history.jobs_all j ON j.id = a.job_id WHERE a.fencing_token > 1 AND a.started_at IS NOT NULL ORDER BY a.started_at`,
      );
      expect(rows).toHaveLength(n);
      // No replayed attempt started before its due slot (a requeued one has a later slot).
      expect(rows.every((r) => r.started_ms >= r.due_ms - 1)).toBe(true);
      // Attempt starts never beat the rate: at most `rate` in any one-second window (the start gate
      // spaces them 1/rate apart; the release slots keep workers from queueing at it).
      const starts = rows.map((r) => r.started_ms);
      const perSecond = maxInWindow(starts, 1_000);
      const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
      const pacing =
        `replay of ${n} at ${rate}/s: ${((starts.at(-1)! - starts[0]!) / 1000).toFixed(1)} s, most starts in any 1 s: ${perSecond}, ` +
        `smallest gap ${Math.min(...gaps)} ms, median gap ${[...gaps].sort((a, b) => a - b)[gaps.length >> 1]} ms`;
      expect(perSecond, pacing).toBeLessThanOrEqual(rate);
      expect(Math.min(...gaps), pacing).toBeGreaterThanOrEqual(1000 / rate);
      expect(starts.at(-1)! - starts[0]!, pacing).toBeGreaterThanOrEqual(((n - 1) / rate) * 1000 - 100);
      // Highest priority first: the 2s were all released before any 0 (rounds of 1 s of slots, 20 jobs each, so
      // the 1s lie between). Read from the release, not the due times: a job that reached the start gate early
      // is requeued to a later slot, behind jobs released after it.
      const order = await w.pool.query<{ last_high: Date; first_low: Date }>(
        `SELECT max(released_at) FILTER (WHERE priority = 2) AS last_high, min(released_at) FILTER (WHERE priority = 0) AS first_low
           FROM dlq_replay_items WHERE replay_id = $1`,
        [replay.id],
      );
      expect(order.rows[0]!.last_high.getTime()).toBeLessThan(order.rows[0]!.first_low.getTime());
    },
    300_000,
  );

  it("a replay against a target that still fails pauses itself and says why; resumed after the fix, it completes", async () => {
    await w.startScheduler();
    await w.startWorker({ BREAKER_OPEN_FOR: "5s" }); // a circuit breaker may notice the failing target too
    const t = await w.createTenant();
    let healthy = false;
    sink.respond(() => ({ status: healthy ? 200 : 503 }));
    // 300 jobs that died an hour ago (the breaker has forgotten them), as the worker leaves them.
    await createJobs(t, 300, sink.url("/payments"));
    await w.pool.query(
      `UPDATE jobs SET status = 'dead', attempt_count = 1, finished_at = now() - interval '1 hour', last_error = '{"kind":"retryable","status":503}'`,
    );
    const replay = (await startReplay(t, 50))!; // nobody fixed the target
    await waitFor(async () => (await replayRow(replay.id)).status === "auto_paused", { timeoutMs: 30_000, description: "replay paused itself" });
    const paused = await replayRow(replay.id);
    // Whichever notices first: the replay's own failure rate, or the dependency's open circuit breaker.
    expect(paused.status_reason).toMatch(/of the last 20 replayed jobs failed again \(\d+%, threshold 50%\)\. Errors: http_status 503|circuit breaker of 127\.0\.0\.1:\d+ is open/);
    expect(paused.released).toBeLessThan(300);
    const audit = await w.pool.query<{ actor_type: string; details: unknown }>(`SELECT actor_type, details FROM audit_log WHERE target_id = $1 AND action = 'dlq.replay.auto_paused'`, [replay.id]);
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0]?.actor_type).toBe("system");

    // Paused means paused: nothing more is released.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await replayRow(replay.id)).released).toBe(paused.released);

    healthy = true;
    expect(await sql.applyReplayAction(w.pool, t.id, replay.id, "resume", "running")).not.toBeNull();
    // Jobs held behind a breaker that opened meanwhile wait for its probe (5 s here), then run.
    await waitFor(async () => (await replayRow(replay.id)).status === "completed", { timeoutMs: 90_000, description: "replay completed after the fix" }).catch(async (err: Error) => {
      // The failure carries where the replay stood: its row, jobs by status, items by outcome.
      const jobs = (await w.pool.query(`SELECT status, count(*) FROM jobs GROUP BY 1`)).rows;
      const items = (await w.pool.query(`SELECT coalesce(outcome,'-') o, released_at IS NULL AS pending, first_outcome, count(*) FROM dlq_replay_items GROUP BY 1,2,3`)).rows;
      throw new Error(`${err.message}; replay ${JSON.stringify(await replayRow(replay.id))}, jobs ${JSON.stringify(jobs)}, items ${JSON.stringify(items)}`, { cause: err });
    });
    const done = await replayRow(replay.id);
    expect(done.released).toBe(300);
    expect(done.succeeded + done.failed).toBe(300);
    expect(done.succeeded).toBeGreaterThanOrEqual(300 - paused.released);
  }, 180_000);
});
