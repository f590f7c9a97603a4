import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import type { Scheduler } from "../src/scheduler.js";
import type pg from "pg";
import { PassThrough } from "node:stream";
import { createLogger } from "@tick/runtime";
import { DueTenantSource } from "../src/dispatch/due-tenant-source.js";
import { createWorld, statusCounts, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

const counter = async (s: Scheduler, name: "pollingRounds" | "dueIndexRebuilds" | "dueIndexRepairs") =>
  (await s.metrics[name].get()).values.reduce((sum, v) => sum + v.value, 0);

/** What the API does after committing a job: note its due time in the index. */
async function createDue(w: World, s: Scheduler, tenant: { id: string; queueId: string; shard: number }, count: number, dueInMs = 0) {
  await w.insertJobs(tenant, count, { dueInMs });
  await s.dueIndex.noteDue(tenant.shard, tenant.id, Date.now() + dueInMs).catch(() => {});
}

describe("Redis due-time index", () => {
  it("is built from Postgres while dispatch polls Postgres, then serves dispatch", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    const tenants = await Promise.all([w.createTenant(), w.createTenant()]);
    for (const t of tenants) await w.insertJobs(t, 10);
    expect(await s.dispatchOnce()).toBe(20); // polling round (and first rebuild batch)
    expect(await counter(s, "pollingRounds")).toBeGreaterThanOrEqual(1);
    expect(await counter(s, "dueIndexRebuilds")).toBeGreaterThanOrEqual(1);

    const pollsBefore = await counter(s, "pollingRounds");
    for (const t of tenants) await createDue(w, s, t, 5);
    expect(await s.dispatchOnce()).toBe(10);
    expect(await counter(s, "pollingRounds")).toBe(pollsBefore); // served by the index
    // Tenants whose due work ran out were settled to their next due time (none): the index is empty.
    for (const t of tenants) expect((await s.dueIndex.entries(t.shard)).has(t.id)).toBe(false);
  });

  it("a job whose index write was lost is found by reconciliation", async () => {
    const s = w.startScheduler("s");
    await s.init();
    await s.leaseTick();
    await s.dispatchOnce(); // builds the (empty) index
    const t = await w.createTenant();
    await w.insertJobs(t, 3); // no noteDue: the writer's Redis call failed
    expect(await s.dispatchOnce()).toBe(0);
    expect(await s.reconcileOnce()).toBe(1);
    expect(await counter(s, "dueIndexRepairs")).toBe(1);
    expect(await s.dispatchOnce()).toBe(3);
  });

  it("Redis flushed mid-run: no job lost, every due job dispatched once, the polling fallback and the rebuild observed", async () => {
    const s = w.startScheduler("s");
    const tenants = await Promise.all([w.createTenant(), w.createTenant(), w.createTenant()]);
    await s.start();
    let created = 0;
    for (let i = 0; i < 10; i++) {
      for (const t of tenants) await createDue(w, s, t, 20, i * 100);
      created += 60;
    }
    await waitFor(async () => (await statusCounts(w.pool)).dispatched >= 200, { timeoutMs: 20_000, description: "dispatch under way" });
    const pollsBefore = await counter(s, "pollingRounds");
    const rebuildsBefore = await counter(s, "dueIndexRebuilds");

    await w.redis.cleanup(); // the index (and the broker's keys) are gone
    for (let i = 0; i < 5; i++) {
      for (const t of tenants) await createDue(w, s, t, 20, i * 100);
      created += 60;
    }
    await waitFor(async () => (await statusCounts(w.pool)).dispatched === created, {
      timeoutMs: 30_000,
      description: `all ${created} jobs dispatched`,
    });
    await s.pause();
    expect(await counter(s, "pollingRounds")).toBeGreaterThan(pollsBefore);
    expect(await counter(s, "dueIndexRebuilds")).toBeGreaterThan(rebuildsBefore);
    const perJob = await w.pool.query(`SELECT count(*)::int AS n FROM attempts GROUP BY job_id HAVING count(*) > 1`);
    expect(perJob.rows).toEqual([]);
    expect(await statusCounts(w.pool)).toEqual({ dispatched: created });
  });
});

describe("clock calibration (database against Redis)", () => {
  it("keeps the tightest of a few readings: a first statement held up before it ran (a connection being opened) does not skew the offset", async () => {
    const s = w.startScheduler("s");
    // The same database; its first statement waits 80 ms before it is sent, as a cold pool's does.
    let first = true;
    const pool = {
      query: async (...args: Parameters<pg.Pool["query"]>) => {
        if (first) {
          first = false;
          await new Promise((r) => setTimeout(r, 80));
        }
        return (w.pool.query as (...a: unknown[]) => unknown)(...args);
      },
    } as unknown as pg.Pool;
    const source = new DueTenantSource(pool, s.dueIndex, { rebuildBatch: 500, maxTenants: 100 }, createLogger({ name: "t", level: "silent", destination: new PassThrough() }), s.metrics);
    await source.calibrate();
    // Both clocks are this host's: the true offset is about 0. The held-up reading alone says about +40 ms.
    const { offsetMs, uncertaintyMs } = source.clock();
    expect(Math.abs(offsetMs!)).toBeLessThan(15);
    expect(uncertaintyMs).toBeLessThan(15);
  });
});
