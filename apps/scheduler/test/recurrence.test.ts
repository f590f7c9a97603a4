import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import { createWorld, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

async function createSchedule(
  w: World,
  tenant: { id: string; queueId: string; shard: number },
  options: { cron: string; misfire?: string; maxCatchUp?: number; thresholdMs?: number; materializedThroughSql?: string; timezone?: string; template?: Record<string, unknown> },
): Promise<string> {
  const { rows } = await w.pool.query<{ id: string }>(
    `INSERT INTO schedules (id, tenant_id, queue_id, shard, name, cron, timezone, misfire_policy, max_catch_up, misfire_threshold_ms,
                            job_template, next_fire_at, materialized_through, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, gen_random_uuid()::text, $4, $5, $6::misfire_policy, $7, $8, $9, now() - interval '1 second',
             ${options.materializedThroughSql ?? "NULL"}, now())
     RETURNING id`,
    [tenant.id, tenant.queueId, tenant.shard, options.cron, options.timezone ?? "UTC", options.misfire ?? "skip", options.maxCatchUp ?? 10, options.thresholdMs ?? 1_000, options.template ?? { target: { url: "https://93.184.216.34/tick" } }],
  );
  return rows[0]!.id;
}

const jobsOf = async (w: World, scheduleId: string) =>
  (
    await w.pool.query<{ occurrence_at: Date; idempotency_key: string; metadata: { occurrence: { coalesced?: number; nominal: string } }; status: string }>(
      `SELECT occurrence_at, idempotency_key, metadata, status FROM jobs WHERE schedule_id = $1 ORDER BY occurrence_at`,
      [scheduleId],
    )
  ).rows;

describe("schedule materialisation", () => {
  it("turns each occurrence into one job with a key derived from the nominal local time, and they get dispatched", async () => {
    const t = await w.createTenant();
    const id = await createSchedule(w, t, { cron: "*/1 * * * * *", thresholdMs: 60_000 });
    const s = w.startScheduler("s");
    await s.start();
    await waitFor(async () => (await jobsOf(w, id)).length >= 3, { timeoutMs: 15_000, description: "three occurrences" });
    await s.pause();
    const jobs = await jobsOf(w, id);
    expect(new Set(jobs.map((j) => j.idempotency_key)).size).toBe(jobs.length);
    expect(jobs[0]!.idempotency_key).toMatch(new RegExp(`^schedule:${id}:\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+00:00$`));
    const gaps = jobs.slice(1).map((j, i) => j.occurrence_at.getTime() - jobs[i]!.occurrence_at.getTime());
    expect(gaps.every((g) => g === 1_000)).toBe(true);
    expect(jobs.some((j) => j.status === "dispatched")).toBe(true);
  });

  it("a burst of more schedules than one round takes goes on at once, not a poll interval later", async () => {
    const t = await w.createTenant();
    await w.pool.query(
      // Every second, last materialised 5 s ago: each is owed its latest occurrence now (run_latest).
      `INSERT INTO schedules (id, tenant_id, queue_id, shard, name, cron, timezone, misfire_policy, job_template, next_fire_at,
                              materialized_through, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, 'burst-' || i, '* * * * * *', 'UTC', 'run_latest', $4, now() - interval '5 seconds',
              now() - interval '5 seconds', now()
         FROM generate_series(1, 230) i`,
      [t.id, t.queueId, t.shard, { target: { url: "https://93.184.216.34/tick" } }],
    );
    // 50 schedules a round and a minute between polls: only going on at once gets all 230 done in seconds.
    const s = w.startScheduler("s", { recurrenceBatch: 50, recurrenceIntervalMs: 60_000 });
    await s.start();
    await waitFor(
      async () => (await w.pool.query<{ n: number }>(`SELECT count(DISTINCT schedule_id)::int AS n FROM jobs WHERE tenant_id = $1`, [t.id])).rows[0]!.n === 230,
      { timeoutMs: 10_000, description: "an occurrence job for each of the 230 schedules" },
    );
    await s.pause();
  });

  it("after downtime spanning six hourly occurrences, each misfire policy produces exactly the runs it promises", async () => {
    const t = await w.createTenant();
    const since = "date_trunc('hour', now()) - interval '5 hours 30 minutes'";
    const skip = await createSchedule(w, t, { cron: "0 * * * *", misfire: "skip", materializedThroughSql: since });
    const latest = await createSchedule(w, t, { cron: "0 * * * *", misfire: "run_latest", materializedThroughSql: since });
    const catchUp = await createSchedule(w, t, { cron: "0 * * * *", misfire: "catch_up", maxCatchUp: 2, materializedThroughSql: since });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    expect(await s.materializeOnce()).toBe(3);

    expect(await jobsOf(w, skip)).toEqual([]);
    const [only] = await jobsOf(w, latest);
    expect(only!.metadata.occurrence.coalesced).toBe(6);
    const { rows } = await w.pool.query<{ top: Date }>(`SELECT date_trunc('hour', now()) AS top`);
    expect(only!.occurrence_at.getTime()).toBe(rows[0]!.top.getTime());
    const caught = await jobsOf(w, catchUp);
    expect(caught.map((j) => j.occurrence_at.getTime())).toEqual([rows[0]!.top.getTime() - 3_600_000, rows[0]!.top.getTime()]);

    // Every schedule now waits for the next hour; running again creates nothing more.
    const next = await w.pool.query<{ next_fire_at: Date }>(`SELECT DISTINCT next_fire_at FROM schedules`);
    expect(next.rows.map((r) => r.next_fire_at.getTime())).toEqual([rows[0]!.top.getTime() + 3_600_000]);
    expect(await s.materializeOnce()).toBe(0);

    // The last occurrence that became a job (the API's lastFireAt), never the materialiser's cursor: the skip
    // schedule made none; the others made the top of this hour.
    const last = await w.pool.query<{ id: string; last_occurrence_at: Date | null }>(`SELECT id, last_occurrence_at FROM schedules`);
    const lastOf = new Map(last.rows.map((r) => [r.id, r.last_occurrence_at?.getTime() ?? null]));
    expect(lastOf.get(skip)).toBeNull();
    expect(lastOf.get(latest)).toBe(rows[0]!.top.getTime());
    expect(lastOf.get(catchUp)).toBe(rows[0]!.top.getTime());
  });

  it("the same occurrence is never created twice, even when materialised again from an old position", async () => {
    const t = await w.createTenant();
    const id = await createSchedule(w, t, { cron: "0 * * * *", misfire: "catch_up", maxCatchUp: 5, thresholdMs: 1_000, materializedThroughSql: "date_trunc('hour', now()) - interval '2 hours 30 minutes'" });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    await s.materializeOnce();
    // A stale copy of the schedule row (as a paused scheduler would have read it) replays the same window.
    await w.pool.query(`UPDATE schedules SET materialized_through = date_trunc('hour', now()) - interval '2 hours 30 minutes', next_fire_at = now() - interval '1 second' WHERE id = $1`, [id]);
    await s.materializeOnce();
    expect(await jobsOf(w, id)).toHaveLength(3);
  });

  it("one round writes the occurrences of many schedules together, each job from its own schedule's template, and a replay of the whole batch creates none twice", async () => {
    const t = await w.createTenant();
    const since = "date_trunc('hour', now()) - interval '30 minutes'";
    const plain = [];
    for (let i = 0; i < 50; i++) plain.push(await createSchedule(w, t, { cron: "0 * * * *", misfire: "run_latest", materializedThroughSql: since }));
    const custom = await createSchedule(w, t, {
      cron: "0 * * * *",
      misfire: "run_latest",
      materializedThroughSql: since,
      template: {
        target: { method: "PUT", url: "https://93.184.216.34/custom", headers: { "x-a": "1" }, body: "hi", timeoutMs: 1234 },
        priority: 7,
        maxAttempts: 2,
        dependencyKey: "dep-x",
        callbackUrl: "https://93.184.216.34/cb",
        metadata: { team: "a" },
        expiresAfterMs: 60_000,
      },
    });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    expect(await s.materializeOnce()).toBe(51);
    const { rows } = await w.pool.query<Record<string, unknown>>(
      `SELECT j.schedule_id, j.method, j.url, j.headers, j.body, j.timeout_ms, j.priority, j.max_attempts, j.dependency_key, j.callback_url, j.metadata,
              extract(epoch FROM j.expires_at - j.due_at)::int AS expires_after_s, j.backoff = q.default_backoff AS default_backoff, j.timeout_ms = q.default_timeout_ms AS default_timeout
         FROM jobs j JOIN queues q ON q.id = j.queue_id ORDER BY j.schedule_id = $1`,
      [custom],
    );
    expect(new Set(rows.map((r) => r.schedule_id))).toEqual(new Set([...plain, custom]));
    expect(rows[0]).toMatchObject({ method: "POST", url: "https://93.184.216.34/tick", headers: {}, body: null, priority: 0, dependency_key: "93.184.216.34", callback_url: null, expires_after_s: null, default_backoff: true, default_timeout: true });
    expect(rows[50]).toMatchObject({ method: "PUT", url: "https://93.184.216.34/custom", headers: { "x-a": "1" }, body: "hi", timeout_ms: 1234, priority: 7, max_attempts: 2, dependency_key: "dep-x", callback_url: "https://93.184.216.34/cb", expires_after_s: 60 });
    expect(rows[50]!.metadata).toMatchObject({ team: "a", occurrence: { coalesced: 1 } });

    // Every schedule put back to its old position (a stale copy): the batch is replayed and creates nothing.
    await w.pool.query(`UPDATE schedules SET materialized_through = ${since}, next_fire_at = now() - interval '1 second'`);
    expect(await s.materializeOnce()).toBe(0);
    expect((await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`)).rows[0]!.n).toBe(51);
    const next = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM schedules WHERE next_fire_at > now()`);
    expect(next.rows[0]!.n).toBe(51);
  });
});
