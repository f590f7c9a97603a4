import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createPool, sql } from "@tick/db";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();
const job = { target: { url: "https://93.184.216.34/report" } };

describe("schedules API", () => {
  it("creates, reads, lists, updates, pauses, resumes and deletes a schedule, auditing each change", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createSchedule", { body: { name: "nightly", cron: "30 2 * * *", timezone: "Europe/Paris", misfirePolicy: "run_latest", job } });
    expect(created.status).toBe(201);
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    expect(created.body).toMatchObject({ name: "nightly", queue: "default", dstGapPolicy: "shift_forward", dstOverlapPolicy: "first", misfirePolicy: "run_latest", paused: false, version: 1 });
    expect(Date.parse(created.body.nextFireAt!)).toBeGreaterThan(Date.now());
    expect(created.body.lastFireAt).toBeNull(); // it has never fired
    expect(created.headers.get("location")).toBe(`/api/v1/schedules/${created.body.id}`);
    expect((await client.call("createSchedule", { body: { name: "nightly", cron: "0 3 * * *", timezone: "UTC", job } })).status).toBe(409);

    const id = created.body.id;
    const list = await client.call("listSchedules", {});
    if (!list.ok) throw new Error("list failed");
    expect(list.body.data.map((s) => s.id)).toEqual([id]);

    const updated = await client.call("updateSchedule", { params: { id }, body: { cron: "0 4 * * *", dstOverlapPolicy: "both" } });
    if (!updated.ok) throw new Error("update failed");
    expect(updated.body).toMatchObject({ cron: "0 4 * * *", dstOverlapPolicy: "both", version: 2 });
    const paused = await client.call("pauseSchedule", { params: { id } });
    if (!paused.ok) throw new Error("pause failed");
    expect(paused.body.paused).toBe(true);
    expect(paused.body.nextFireAt).toBeNull(); // a paused schedule fires nothing
    const resumed = await client.call("resumeSchedule", { params: { id } });
    if (!resumed.ok) throw new Error("resume failed");
    expect(resumed.body.paused).toBe(false);
    expect(Date.parse(resumed.body.nextFireAt!)).toBeGreaterThan(Date.now());
    expect((await client.call("deleteSchedule", { params: { id } })).status).toBe(200);
    expect((await client.call("getSchedule", { params: { id } })).status).toBe(404);

    const actions = (await suite.h.prisma.auditLog.findMany({ where: { tenantId: suite.a.id, targetType: "schedule" }, orderBy: { id: "asc" } })).map((a) => a.action);
    expect(actions).toEqual(["schedule.created", "schedule.updated", "schedule.paused", "schedule.resumed", "schedule.deleted"]);
  });

  it.each([
    ["a fixed offset", { timezone: "+02:00" }, "validation-failed"],
    ["an unknown zone", { timezone: "Europe/Atlantis" }, "validation-failed"],
    ["a bad cron", { cron: "0 25 * * *" }, "validation-failed"],
    ["a private target", { job: { target: { url: "http://10.0.0.1/x" } } }, "target-not-allowed"],
  ])("refuses %s", async (_name, override, type) => {
    const res = await suite.h.client(suite.a.apiKey).call("createSchedule", { body: { name: `bad-${type}-${Math.random()}`, cron: "0 9 * * *", timezone: "UTC", job, ...override } });
    expect(res.status).toBe(422);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe(`https://tick.dev/problems/${type}`);
  });

  it("previews fire times with the DST policy's effect marked, for a saved schedule and for an unsaved rule", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const unsaved = await client.call("previewRule", {
      body: { cron: "30 2 * * *", timezone: "Europe/Paris", dstOverlapPolicy: "both", count: 3, after: "2026-10-24T12:00:00Z" },
    });
    if (!unsaved.ok) throw new Error(JSON.stringify(unsaved.problem));
    expect(unsaved.body.occurrences).toEqual([
      { at: "2026-10-25T00:30:00.000Z", local: "2026-10-25T02:30:00", nominal: "2026-10-25T02:30:00", offset: "+02:00", dst: "overlap_first" },
      { at: "2026-10-25T01:30:00.000Z", local: "2026-10-25T02:30:00", nominal: "2026-10-25T02:30:00", offset: "+01:00", dst: "overlap_last" },
      { at: "2026-10-26T01:30:00.000Z", local: "2026-10-26T02:30:00", nominal: "2026-10-26T02:30:00", offset: "+01:00" },
    ]);
    const saved = await client.call("createSchedule", { body: { name: "spring", cron: "30 2 * * *", timezone: "Europe/Paris", job } });
    if (!saved.ok) throw new Error("create failed");
    const preview = await client.call("previewSchedule", { params: { id: saved.body.id }, query: { count: 1, after: "2026-03-28T12:00:00Z" } });
    if (!preview.ok) throw new Error("preview failed");
    expect(preview.body.occurrences).toEqual([{ at: "2026-03-29T01:00:00.000Z", local: "2026-03-29T03:00:00", nominal: "2026-03-29T02:30:00", offset: "+02:00", dst: "gap_shifted" }]);
  });

  it("hides other tenants' schedules", async () => {
    const created = await suite.h.client(suite.a.apiKey).call("createSchedule", { body: { name: "mine", cron: "0 9 * * *", timezone: "UTC", job } });
    if (!created.ok) throw new Error("create failed");
    const b = await suite.h.createTenant();
    const asB = suite.h.client(b.apiKey);
    expect((await asB.call("getSchedule", { params: { id: created.body.id } })).status).toBe(404);
    expect((await asB.call("deleteSchedule", { params: { id: created.body.id } })).status).toBe(404);
  });

  it("an occurrence of a schedule stores the job an API create stores from the same template", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const templates = [
      job,
      {
        target: { method: "PUT" as const, url: "https://93.184.216.34:8443/composer?x=1", headers: { "x-a": "1" }, body: "it's", timeoutMs: 1234 },
        priority: 7,
        maxAttempts: 2,
        backoff: { strategy: "fixed" as const, baseMs: 500, maxMs: 500, jitter: "none" as const },
        callbackUrl: "https://93.184.216.34/cb",
        dependencyKey: "payments",
        metadata: { team: "a", nested: { n: null } },
      },
    ];
    // What each path sets its own way: timing, identity, trace, and the occurrence's note in the metadata.
    const own = ["id", "version", "due_at", "expires_at", "idempotency_key", "request_hash", "idempotency_expires_at", "schedule_id", "occurrence_at", "traceparent", "tracestate", "created_at", "updated_at"];
    const pool = createPool(suite.h.db.url, { max: 1 });
    try {
      const stored = async (id: string) => {
        const row = { ...(await pool.query<Record<string, unknown>>(`SELECT * FROM jobs WHERE id = $1`, [id])).rows[0]! };
        for (const column of own) delete row[column];
        const { occurrence: _occurrence, ...metadata } = row.metadata as Record<string, unknown>;
        return { ...row, metadata };
      };
      for (const [i, template] of templates.entries()) {
        const created = await client.call("createJob", { body: { ...template, delayMs: 3_600_000 } });
        if (!created.ok) throw new Error(JSON.stringify(created.problem));
        const schedule = await client.call("createSchedule", { body: { name: `composer-${i}`, cron: "0 3 * * *", timezone: "UTC", job: template } });
        if (!schedule.ok) throw new Error(JSON.stringify(schedule.problem));
        // One occurrence, made as the materialiser makes it: from the schedule row as stored.
        const [row] = (await pool.query<sql.ScheduleRow>(`SELECT * FROM schedules WHERE id = $1`, [schedule.body.id])).rows;
        const id = randomUUID();
        const at = new Date();
        const occurrences = [{ scheduleId: row!.id, template: row!.job_template, id, dueAt: at, occurrenceAt: at, idempotencyKey: `schedule:${row!.id}:test`, occurrence: { nominal: "test", offsetMinutes: 0 } }];
        expect(await sql.insertOccurrenceJobs(pool, occurrences, 60_000)).toBe(1);
        expect(await stored(id)).toEqual(await stored(created.body.id));
      }
    } finally {
      await pool.end();
    }
  });

  it("deleting a schedule leaves its live occurrence jobs in place, no longer naming it", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const schedule = await client.call("createSchedule", { body: { name: "to-delete", cron: "0 3 * * *", timezone: "UTC", job } });
    if (!schedule.ok) throw new Error(JSON.stringify(schedule.problem));
    const pool = createPool(suite.h.db.url, { max: 1 });
    try {
      const [row] = (await pool.query<sql.ScheduleRow>(`SELECT * FROM schedules WHERE id = $1`, [schedule.body.id])).rows;
      const id = randomUUID();
      const at = new Date(Date.now() + 3_600_000);
      const occurrence = { scheduleId: row!.id, template: row!.job_template, id, dueAt: at, occurrenceAt: at, idempotencyKey: `schedule:${row!.id}:del`, occurrence: { nominal: "del", offsetMinutes: 0 } };
      expect(await sql.insertOccurrenceJobs(pool, [occurrence], 60_000)).toBe(1);
      expect((await client.call("deleteSchedule", { params: { id: schedule.body.id } })).status).toBe(200);
      const job = await client.call("getJob", { params: { id } });
      if (!job.ok) throw new Error(JSON.stringify(job.problem));
      expect(job.body).toMatchObject({ id, status: "scheduled", scheduleId: null });
    } finally {
      await pool.end();
    }
  });
});

itConformsToOpenApi(suite);
