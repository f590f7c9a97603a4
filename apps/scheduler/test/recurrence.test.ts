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
  options: { cron: string; misfire?: string; maxCatchUp?: number; thresholdMs?: number; lastFireSql?: string; timezone?: string },
): Promise<string> {
  const { rows } = await w.pool.query<{ id: string }>(
    `INSERT INTO schedules (id, tenant_id, queue_id, shard, name, cron, timezone, misfire_policy, max_catch_up, misfire_threshold_ms,
                            job_template, next_fire_at, last_fire_at, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, gen_random_uuid()::text, $4, $5, $6::misfire_policy, $7, $8, $9, now() - interval '1 second',
             ${options.lastFireSql ?? "NULL"}, now())
     RETURNING id`,
    [tenant.id, tenant.queueId, tenant.shard, options.cron, options.timezone ?? "UTC", options.misfire ?? "skip", options.maxCatchUp ?? 10, options.thresholdMs ?? 1_000, { target: { url: "https://93.184.216.34/tick" } }],
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

  it("after downtime spanning six hourly occurrences, each misfire policy produces exactly the runs it promises", async () => {
    const t = await w.createTenant();
    const since = "date_trunc('hour', now()) - interval '5 hours 30 minutes'";
    const skip = await createSchedule(w, t, { cron: "0 * * * *", misfire: "skip", lastFireSql: since });
    const latest = await createSchedule(w, t, { cron: "0 * * * *", misfire: "run_latest", lastFireSql: since });
    const catchUp = await createSchedule(w, t, { cron: "0 * * * *", misfire: "catch_up", maxCatchUp: 2, lastFireSql: since });
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
  });

  it("the same occurrence is never created twice, even when materialised again from an old position", async () => {
    const t = await w.createTenant();
    const id = await createSchedule(w, t, { cron: "0 * * * *", misfire: "catch_up", maxCatchUp: 5, thresholdMs: 1_000, lastFireSql: "date_trunc('hour', now()) - interval '2 hours 30 minutes'" });
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    await s.materializeOnce();
    // A stale copy of the schedule row (as a paused scheduler would have read it) replays the same window.
    await w.pool.query(`UPDATE schedules SET last_fire_at = date_trunc('hour', now()) - interval '2 hours 30 minutes', next_fire_at = now() - interval '1 second' WHERE id = $1`, [id]);
    await s.materializeOnce();
    expect(await jobsOf(w, id)).toHaveLength(3);
  });
});
