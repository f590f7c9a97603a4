import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import { createProcessWorld, type ProcessWorld } from "./harness.js";

let w: ProcessWorld;
beforeEach(async () => {
  w = await createProcessWorld();
});
afterEach(async () => w?.close());

interface OccurrenceJob {
  occurrence_at: Date;
  created_at: Date;
  coalesced: number | null;
}

async function createSchedule(w: ProcessWorld, tenant: { id: string; queueId: string; shard: number }, misfire: string): Promise<string> {
  const { rows } = await w.pool.query<{ id: string }>(
    `INSERT INTO schedules (id, tenant_id, queue_id, shard, name, cron, timezone, misfire_policy, max_catch_up, misfire_threshold_ms,
                            job_template, next_fire_at, materialized_through, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4::text, '* * * * * *', 'Europe/Paris', $4::text::misfire_policy, 2, 1000, $5, now(), now(), now())
     RETURNING id`,
    [tenant.id, tenant.queueId, tenant.shard, misfire, { target: { url: "https://93.184.216.34/tick" } }],
  );
  return rows[0]!.id;
}

const jobsOf = async (w: ProcessWorld, id: string, after: Date): Promise<OccurrenceJob[]> =>
  (
    await w.pool.query<OccurrenceJob>(
      `SELECT occurrence_at, created_at, (metadata->'occurrence'->>'coalesced')::int AS coalesced FROM jobs
        WHERE schedule_id = $1 AND occurrence_at > $2 ORDER BY occurrence_at`,
      [id, after],
    )
  ).rows;

describe("misfire policies across a real scheduler downtime (every-second schedules)", () => {
  it("skip runs none of the missed occurrences, run_latest runs one saying how many, catch_up runs at most max_catch_up", async () => {
    const t = await w.createTenant();
    const ids = { skip: await createSchedule(w, t, "skip"), latest: await createSchedule(w, t, "run_latest"), catchUp: await createSchedule(w, t, "catch_up") };
    const scheduler = await w.startScheduler({ SCHEDULER_RECURRENCE_LOOKAHEAD: "0ms", SCHEDULER_RECURRENCE_INTERVAL: "100ms" });
    await waitFor(async () => (await jobsOf(w, ids.skip, new Date(0))).length >= 2, { timeoutMs: 15_000, description: "on-time occurrences" });

    await scheduler.stop(); // clean stop: its shards are released, nothing materialises
    const stoppedAt = (await w.pool.query<{ t: Date }>(`SELECT max(materialized_through) AS t FROM schedules`)).rows[0]!.t;
    await new Promise((r) => setTimeout(r, 6_000)); // downtime: about six occurrences per schedule
    await w.startScheduler({ SCHEDULER_RECURRENCE_LOOKAHEAD: "0ms", SCHEDULER_RECURRENCE_INTERVAL: "100ms" });
    await waitFor(async () => (await jobsOf(w, ids.skip, new Date(stoppedAt.getTime() + 5_000))).length >= 2, { timeoutMs: 20_000, description: "firing again" });

    // Missed = materialised more than the threshold (1 s) after its time: the same test the scheduler applies
    // (created_at is the materialising transaction's now()).
    const late = (j: OccurrenceJob) => j.created_at.getTime() - j.occurrence_at.getTime() > 1_000;

    const skip = await jobsOf(w, ids.skip, stoppedAt);
    expect(skip.filter(late)).toEqual([]);

    const latest = (await jobsOf(w, ids.latest, stoppedAt)).filter(late);
    expect(latest).toHaveLength(1);
    // It stands for every missed second from the stop up to and including its own occurrence.
    const lastBefore = (await w.pool.query<{ t: Date }>(`SELECT max(occurrence_at) AS t FROM jobs WHERE schedule_id = $1 AND occurrence_at <= $2`, [ids.latest, stoppedAt])).rows[0]!.t;
    expect(latest[0]!.coalesced).toBe(Math.round((latest[0]!.occurrence_at.getTime() - lastBefore.getTime()) / 1000));
    expect(latest[0]!.coalesced).toBeGreaterThanOrEqual(3);

    const caught = (await jobsOf(w, ids.catchUp, stoppedAt)).filter(late);
    expect(caught).toHaveLength(2);
    expect(caught[1]!.occurrence_at.getTime() - caught[0]!.occurrence_at.getTime()).toBe(1_000);
  });
});
