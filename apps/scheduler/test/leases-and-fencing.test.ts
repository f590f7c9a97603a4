import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import { parseShardRegions } from "../src/leases/shard-regions.js";
import { SHARDS, createWorld, statusCounts, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

describe("shard leases", () => {
  it("two schedulers split the shards between them; a clean stop hands them over at once", async () => {
    const a = w.startScheduler("a");
    const b = w.startScheduler("b");
    await a.init();
    await a.leaseTick();
    expect(a.heldShards()).toHaveLength(SHARDS);
    // b joins: a releases its surplus on its next tick, b takes it on its next.
    await b.leaseTick();
    await a.leaseTick();
    await b.leaseTick();
    expect(a.heldShards().length + b.heldShards().length).toBe(SHARDS);
    expect(b.heldShards()).toHaveLength(SHARDS / 2);
    const shardsOfA = a.heldShards().map((l) => l.shard);
    expect(b.heldShards().map((l) => l.shard).filter((s) => shardsOfA.includes(s))).toEqual([]);

    await a.stop();
    await b.leaseTick();
    expect(b.heldShards()).toHaveLength(SHARDS);
  });

  it("a scheduler frozen past its lease TTL is fenced out after resuming: its writes are refused and counted, no job is dispatched twice", async () => {
    const short = { leaseTtlMs: 1_500, leaseRenewIntervalMs: 500 };
    const stale = w.startScheduler("stale", short);
    await stale.init();
    await stale.leaseTick();
    const staleEpochs = new Map(stale.heldShards().map((l) => [l.shard, BigInt(l.epoch)]));
    expect(staleEpochs.size).toBe(SHARDS);

    // Freeze it (no renewals, no loops), as a GC pause or SIGSTOP would.
    await stale.pause();
    const fresh = w.startScheduler("fresh", short);
    await waitFor(async () => (await fresh.leaseTick()).length === SHARDS, { timeoutMs: 10_000, description: "takeover after the TTL" });
    for (const lease of fresh.heldShards()) expect(BigInt(lease.epoch)).toBeGreaterThan(staleEpochs.get(lease.shard)!);

    const tenants = await Promise.all([w.createTenant(), w.createTenant(), w.createTenant()]);
    for (const t of tenants) await w.insertJobs(t, 50);

    // The stale scheduler resumes mid-round, still believing it leads: every write is refused.
    expect(await stale.dispatchOnce()).toBe(0);
    expect((await stale.reapOnce()).every((r) => !r.leaseHeld)).toBe(true);
    const { rows } = await w.pool.query<{ n: string }>(`SELECT sum(stale_writes_rejected)::text AS n FROM shard_leases`);
    expect(Number(rows[0]!.n)).toBeGreaterThanOrEqual(SHARDS);
    const metric = await stale.metrics.staleWrites.get();
    expect(metric.values.reduce((sum, v) => sum + v.value, 0)).toBeGreaterThanOrEqual(SHARDS);
    expect(await statusCounts(w.pool)).toEqual({ scheduled: 150 });

    // The rightful leader dispatches everything, exactly once.
    await fresh.dispatchOnce();
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 150 });
    const attempts = await w.pool.query<{ job_id: string; n: number; epoch: string }>(
      `SELECT job_id, count(*)::int AS n, max(shard_epoch)::text AS epoch FROM attempts GROUP BY job_id`,
    );
    expect(attempts.rows).toHaveLength(150);
    expect(attempts.rows.every((r) => r.n === 1)).toBe(true);

    // Once the stale scheduler renews, it learns it lost the shards and stops acting on them.
    expect(await stale.leaseTick()).toEqual([]);
    expect(await stale.dispatchOnce()).toBe(0);
  });

  it("home regions (S18): each region holds its own shards; when region a is lost b takes them with higher epochs and a's stale scheduler is fenced; when a returns b hands them back", async () => {
    const short = { leaseTtlMs: 1_500, leaseRenewIntervalMs: 500, shardRegions: parseShardRegions("a:0-1,b:2-3", SHARDS) };
    const a = w.startScheduler("a", { ...short, region: "a" });
    const b = w.startScheduler("b", { ...short, region: "b" });
    const shardsOf = (s: typeof a) => s.heldShards().map((l) => l.shard);
    await a.init();
    // b starts first: no scheduler of region a is alive, so b takes every shard; once a's is alive, b
    // hands a's shards back and a takes them.
    expect(await b.leaseTick()).toHaveLength(SHARDS);
    await a.leaseTick();
    await b.leaseTick();
    await a.leaseTick();
    expect(shardsOf(a)).toEqual([0, 1]);
    expect(shardsOf(b)).toEqual([2, 3]);
    const epochsOfA = new Map(a.heldShards().map((l) => [l.shard, BigInt(l.epoch)]));

    // Region a is lost (its scheduler frozen, no renewals): b takes a's shards once their leases lapse.
    await a.pause();
    await waitFor(async () => (await b.leaseTick()).length === SHARDS, { timeoutMs: 10_000, description: "b takes region a's shards" });
    for (const l of b.heldShards().filter((x) => epochsOfA.has(x.shard))) expect(BigInt(l.epoch)).toBeGreaterThan(epochsOfA.get(l.shard)!);

    let tenant = await w.createTenant();
    while (tenant.shard > 1) tenant = await w.createTenant();
    await w.insertJobs(tenant, 20);
    // a's scheduler comes back believing it still holds shards 0 and 1: every write is refused.
    expect(await a.dispatchOnce()).toBe(0);
    expect(await statusCounts(w.pool)).toEqual({ scheduled: 20 });
    await b.dispatchOnce();
    expect(await statusCounts(w.pool)).toEqual({ dispatched: 20 });

    // a renews: it learns it lost them, says it is alive; b hands region a's shards back; a takes them
    // with epochs above b's.
    expect(await a.leaseTick()).toEqual([]);
    const epochsOfB = new Map(b.heldShards().map((l) => [l.shard, BigInt(l.epoch)]));
    await b.leaseTick();
    expect(shardsOf(b)).toEqual([2, 3]);
    await a.leaseTick();
    expect(shardsOf(a)).toEqual([0, 1]);
    for (const l of a.heldShards()) expect(BigInt(l.epoch)).toBeGreaterThan(epochsOfB.get(l.shard)!);
    const attempts = await w.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts`);
    expect(attempts.rows[0]!.n).toBe(20);
  });
});
