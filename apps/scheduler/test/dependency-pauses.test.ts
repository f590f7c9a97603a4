import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

const byDependency = async (tenantId: string) => {
  const { rows } = await w.pool.query<{ dependency_key: string; status: string; n: number; attempts: number }>(
    `SELECT j.dependency_key, j.status, count(*)::int AS n, sum((SELECT count(*) FROM attempts a WHERE a.job_id = j.id))::int AS attempts
       FROM jobs j WHERE j.tenant_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
    [tenantId],
  );
  return rows;
};

describe("paused dependencies (S11: pause the affected job class)", () => {
  it("the claim holds a paused dependency's jobs, scheduled and without an attempt, while the rest of the queue runs; resuming releases them", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const t = await w.createTenant();
    const other = await w.createTenant();
    await w.insertJobs(t, 6);
    await w.insertJobs(other, 4);
    // Half of t's jobs call a.example, the other half b.example; other's jobs all call a.example.
    await w.pool.query(`UPDATE jobs SET dependency_key = CASE WHEN ctid IN (SELECT ctid FROM jobs WHERE tenant_id = $1 LIMIT 3) THEN 'a.example' ELSE 'b.example' END WHERE tenant_id = $1`, [t.id]);
    await w.pool.query(`UPDATE jobs SET dependency_key = 'a.example' WHERE tenant_id = $1`, [other.id]);
    await w.pool.query(`INSERT INTO dependency_pauses (tenant_id, dependency_key, paused_by_type) VALUES ($1, 'a.example', 'user')`, [t.id]);

    expect(await s.dispatchOnce()).toBe(7); // t's b.example jobs, and all of other's: its a.example is not paused
    expect(await byDependency(t.id)).toEqual([
      { dependency_key: "a.example", status: "scheduled", n: 3, attempts: 0 },
      { dependency_key: "b.example", status: "dispatched", n: 3, attempts: 3 },
    ]);
    expect(await s.dispatchOnce()).toBe(0); // held round after round

    await w.pool.query(`DELETE FROM dependency_pauses WHERE tenant_id = $1 AND dependency_key = 'a.example'`, [t.id]);
    expect(await s.dispatchOnce()).toBe(3);
    expect((await byDependency(t.id)).map((r) => [r.dependency_key, r.status, r.n])).toEqual([
      ["a.example", "dispatched", 3],
      ["b.example", "dispatched", 3],
    ]);
  });
});
