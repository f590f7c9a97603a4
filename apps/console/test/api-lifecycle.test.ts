import { describe, expect, it } from "vitest";
import { createPool, sql } from "@tick/db";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

const suite = useConsole();

type Line = { type: "job"; job: { id: string; status: string; finishedAt: string; attempts: { number: number }[] } } | { type: "end"; count: number; from: string | null; to: string; exportedThrough: string | null };
const lines = (text: string): Line[] => text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Line);

describe("data lifecycle API: NDJSON export and retention settings", () => {
  it("exports every finished job once with its attempts, live or in history, oldest finish first, and records a complete export", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const pool = createPool(suite.h.db.url, { max: 2 });
    try {
      // Through the API: three jobs, two finish (one then moves to history), one stays scheduled.
      const created: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await client.call("createJob", { body: jobBody({ metadata: { i } }) });
        if (!r.ok) throw new Error(JSON.stringify(r.problem));
        created.push(r.body.id);
      }
      await pool.query(
        `UPDATE jobs SET status = CASE WHEN id = $1 THEN 'succeeded' ELSE 'dead' END::job_status, attempt_count = 1,
                finished_at = now() - interval '10 minutes' + make_interval(secs => CASE WHEN id = $1 THEN 0 ELSE 1 END)
          WHERE id = ANY($2::uuid[])`,
        [created[0], created.slice(0, 2)],
      );
      await pool.query(
        `INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, finished_at)
         VALUES (gen_random_uuid(), $1, $2, 1, 1, 2, 1, 'succeeded', now() - interval '10 minutes')`,
        [created[0], suite.a.id],
      );
      await sql.ensureHistoryPartitionsFor(pool, [new Date(Date.now() - 600_000).toISOString().slice(0, 10)]);
      expect(await sql.moveJobsToHistory(pool, [created[0]!])).toEqual({ jobs: 1, attempts: 1 });
      // And 1,100 older history rows straight into history (more than two export pages).
      const { rows: q } = await pool.query<{ id: string; shard: number }>(`SELECT q.id, t.shard FROM queues q JOIN tenants t ON t.id = q.tenant_id WHERE q.tenant_id = $1 AND q.name = 'default'`, [suite.a.id]);
      await sql.ensureHistoryPartitionsFor(pool, [new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10)]);
      await pool.query(
        `INSERT INTO history.jobs (id, tenant_id, queue_id, shard, status, due_at, url, created_at, updated_at, finished_at)
         SELECT gen_random_uuid(), $1, $2, $3, 'succeeded', f, 'https://93.184.216.34/x', f, f, f
           FROM (SELECT date_trunc('day', now() - interval '2 days') + make_interval(secs => g % 600) AS f FROM generate_series(1, 1100) g) x`,
        [suite.a.id, q[0]!.id, q[0]!.shard],
      );

      // A GET streams the same export but changes nothing: a link on another site cannot move the mark.
      const readOnly = await client.call("exportJobs", {});
      if (!readOnly.ok) throw new Error("export failed");
      expect(lines(readOnly.body).at(-1)).toMatchObject({ type: "end", count: 1102, exportedThrough: null });
      expect((await pool.query(`SELECT exported_through FROM tenants WHERE id = $1`, [suite.a.id])).rows[0]).toEqual({ exported_through: null });
      expect(await suite.h.prisma.auditLog.count({ where: { tenantId: suite.a.id, action: "jobs.exported" } })).toBe(0);

      const res = await client.call("exportJobsAndMark", {});
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
      if (!res.ok) throw new Error("export failed");
      const all = lines(res.body);
      const jobs = all.filter((l) => l.type === "job");
      const end = all[all.length - 1]!;
      expect(end).toMatchObject({ type: "end", count: 1102, from: null });
      expect(jobs).toHaveLength(1102);
      expect(new Set(jobs.map((l) => l.job.id)).size).toBe(1102);
      const finishes = jobs.map((l) => Date.parse(l.job.finishedAt));
      expect(finishes).toEqual([...finishes].sort((x, y) => x - y));
      // The two API jobs finished last: the one in history with its attempt, then the dead one still in the DLQ.
      expect(jobs.slice(-2).map((l) => [l.job.id, l.job.status, l.job.attempts.length])).toEqual([
        [created[0], "succeeded", 1],
        [created[1], "dead", 0],
      ]);
      expect(jobs.some((l) => l.job.id === created[2])).toBe(false);
      if (end.type !== "end") throw new Error("no end line");
      // `to` defaults to a minute before the database's now, and the complete export from the beginning sets the mark.
      expect(Math.abs(Date.parse(end.to) - (Date.now() - 60_000))).toBeLessThan(10_000);
      expect(end.exportedThrough).toBe(end.to);

      // A window after a gap does not move the mark; one that joins it does; one past the horizon is refused.
      await pool.query(`UPDATE tenants SET exported_through = now() - interval '1 day' WHERE id = $1`, [suite.a.id]);
      const hour = 3_600_000;
      const iso = (agoMs: number) => new Date(Date.now() - agoMs).toISOString();
      const gap = await client.call("exportJobsAndMark", { query: { from: iso(12 * hour), to: iso(2 * hour) } });
      if (!gap.ok) throw new Error("export failed");
      const markOf = async () => (await pool.query<{ t: Date }>(`SELECT exported_through AS t FROM tenants WHERE id = $1`, [suite.a.id])).rows[0]!.t.getTime();
      expect(Math.abs((await markOf()) - (Date.now() - 24 * hour))).toBeLessThan(10_000);
      const joined = await client.call("exportJobsAndMark", { query: { from: iso(25 * hour), to: iso(2 * hour) } });
      if (!joined.ok) throw new Error("export failed");
      const joinedEnd = lines(joined.body).at(-1)!;
      expect(joinedEnd).toMatchObject({ type: "end", count: 0 });
      if (joinedEnd.type !== "end") throw new Error("no end line");
      expect(Date.parse(joinedEnd.exportedThrough!)).toBe(Date.parse(joinedEnd.to));
      expect(await markOf()).toBe(Date.parse(joinedEnd.to));
      expect((await client.call("exportJobsAndMark", { query: { from: iso(-hour) } })).status).toBe(422);

      const audit = await client.call("listAuditLog", { query: { action: "jobs.exported" } });
      if (!audit.ok) throw new Error("audit failed");
      expect(audit.body.data.length).toBeGreaterThanOrEqual(1);

      // Another tenant's export holds none of these jobs.
      const b = await suite.h.createTenant();
      const other = await suite.h.client(b.apiKey).call("exportJobs", {});
      if (!other.ok) throw new Error("export failed");
      expect(lines(other.body)).toEqual([expect.objectContaining({ type: "end", count: 0 })]);

      // A window with from after to is refused; a key without jobs:read is refused.
      const bad = await client.call("exportJobs", { query: { from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" } });
      expect(bad.status).toBe(422);
      const { apiKey } = await suite.h.addKey(suite.a.id, ["queues:read"]);
      expect((await suite.h.client(apiKey).call("exportJobs", {})).status).toBe(403);
    } finally {
      await pool.end();
    }
  });

  it("reads and changes retention and export settings within the deployment's ceiling, audited, admin only", async () => {
    const t = await suite.h.createTenant();
    const { apiKey } = await suite.h.addKey(t.id, ["admin"]);
    const admin = suite.h.client(apiKey);
    const read = await admin.call("getSettings", {});
    if (!read.ok) throw new Error(JSON.stringify(read.problem));
    expect(read.body).toEqual({ retentionDays: 7, retentionMaxDays: 90, dlqRetentionDays: 30, exportBeforePrune: false, exportedThrough: null });

    const over = await admin.call("updateSettings", { body: { retentionDays: 91 } });
    expect(over.status).toBe(422);
    if (over.ok) throw new Error("expected a problem");
    expect(over.problem.type).toMatch(/validation-failed$/);
    expect((await admin.call("updateSettings", { body: {} })).status).toBe(422);
    expect((await admin.call("updateSettings", { body: { retentionDays: 3, keep: true } })).status).toBe(422);

    const changed = await admin.call("updateSettings", { body: { retentionDays: 3, exportBeforePrune: true } });
    if (!changed.ok) throw new Error(JSON.stringify(changed.problem));
    expect(changed.body).toMatchObject({ retentionDays: 3, dlqRetentionDays: 30, exportBeforePrune: true });
    const again = await admin.call("getSettings", {});
    if (!again.ok) throw new Error("read failed");
    expect(again.body).toEqual(changed.body);
    const audit = await admin.call("listAuditLog", { query: { action: "tenant.settings.updated" } });
    if (!audit.ok) throw new Error("audit failed");
    expect(audit.body.data[0]).toMatchObject({ details: { before: { retentionDays: 7 }, after: { retentionDays: 3, exportBeforePrune: true } } });

    // Keys without admin cannot read or change them.
    const { apiKey: reader } = await suite.h.addKey(t.id, ["jobs:read", "jobs:write"]);
    expect((await suite.h.client(reader).call("getSettings", {})).status).toBe(403);
    expect((await suite.h.client(reader).call("updateSettings", { body: { retentionDays: 1 } })).status).toBe(403);
  });
});

itConformsToOpenApi(suite);
