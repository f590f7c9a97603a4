import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createTestRedis } from "@tick/testing";
import { createDueIndex } from "./index.js";

const test = createTestRedis();
const redis = new Redis(test.url);
afterAll(async () => {
  await test.cleanup();
  redis.disconnect();
});

describe("due index", () => {
  it("tells the dispatcher how long until the next due time, and which shards need a round", async () => {
    const index = createDueIndex({ redis, prefix: `${test.prefix}:wake` });
    const now = Date.now();
    expect(await index.msUntilNextDue([10, 11], 0)).toBeNull();
    await index.noteDue(10, "later", now + 5_000);
    await index.noteDue(11, "sooner", now + 800);
    const wait = (await index.msUntilNextDue([10, 11], 0))!;
    expect(wait).toBeGreaterThan(500);
    expect(wait).toBeLessThanOrEqual(800);
    // The database's lead on Redis' clock shortens the wait.
    expect((await index.msUntilNextDue([10, 11], 700))!).toBeLessThanOrEqual(100);
    // A tenant due long ago (held by its caps) is left out; one due within `recentMs` is due now.
    await index.noteDue(12, "held", now - 60_000);
    expect((await index.msUntilNextDue([12], 0, 50))).toBeNull();
    await index.noteDue(13, "just", now - 10);
    expect(await index.msUntilNextDue([12, 13], 0, 1_000)).toBe(0);

    // Shards to visit: a due tenant, or no built index; not a shard whose built index lists only later work.
    await redis.set(`${test.prefix}:wake:due:10:built`, "x");
    await redis.set(`${test.prefix}:wake:due:12:built`, "x");
    expect(await index.shardsToVisit([10, 11, 12, 14], 0)).toEqual([11, 12, 14]);
  });

  it("keeps each tenant's earliest due time and lists the due ones by Redis' clock", async () => {
    const index = createDueIndex({ redis, prefix: test.prefix });
    const now = Date.now();
    await index.noteDue(0, "a", now + 60_000);
    await index.noteDue(0, "a", now - 1_000); // lowers
    await index.noteDue(0, "a", now + 120_000); // never raises
    await index.noteDue(0, "b", now + 60_000);
    await index.noteDue(1, "c", now - 5);
    expect(await index.dueTenants(0, 10)).toEqual(["a"]);
    expect(await index.dueTenants(1, 10)).toEqual(["c"]);
    expect((await index.entries(0)).get("a")).toBe(now - 1_000);
  });

  it("settle raises a tenant's score only if no writer touched the tenant since the generation was read", async () => {
    const index = createDueIndex({ redis, prefix: test.prefix });
    const now = Date.now();
    await index.noteDue(2, "t", now - 1_000);
    const gen = await index.generation(2, "t");
    expect(await index.settle(2, "t", gen, now + 60_000)).toBe(true);
    expect(await index.dueTenants(2, 10)).toEqual([]);

    const stale = await index.generation(2, "t");
    await index.noteDue(2, "t", now + 30_000); // a job created while the dispatcher was looking
    expect(await index.settle(2, "t", stale, now + 90_000)).toBe(false);
    expect((await index.entries(2)).get("t")).toBe(now + 30_000);

    const fresh = await index.generation(2, "t");
    expect(await index.settle(2, "t", fresh, null)).toBe(true);
    expect((await index.entries(2)).has("t")).toBe(false);
  });

  it("is marked built only by a rebuild that Redis did not lose half-way", async () => {
    const index = createDueIndex({ redis, prefix: test.prefix });
    expect(await index.isBuilt(3)).toBe(false);
    const token = await index.beginRebuild(3);
    expect(await index.finishRebuild(3, token)).toBe(true);
    expect(await index.isBuilt(3)).toBe(true);

    // A flush during a rebuild: the rebuild cannot claim completeness.
    const lost = await index.beginRebuild(4);
    await test.cleanup();
    expect(await index.finishRebuild(4, lost)).toBe(false);
    expect(await index.isBuilt(4)).toBe(false);
  });
});
