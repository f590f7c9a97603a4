import { describe, expect, it } from "vitest";
import { parseShardRegions, planShards, type LiveScheduler } from "./shard-regions.js";

const homes = parseShardRegions("a:0-3,b:4-7", 8);
const live = (...nodes: [string, string, number][]) => new Map<string, LiveScheduler>(nodes.map(([id, region, held]) => [id, { region, held }]));

describe("parseShardRegions", () => {
  it("reads ranges and single shards", () => {
    expect([...parseShardRegions("eu:0-1, us:2,us:3", 4)]).toEqual([
      [0, "eu"],
      [1, "eu"],
      [2, "us"],
      [3, "us"],
    ]);
    expect(parseShardRegions("", 4).size).toBe(0);
  });

  it.each([
    ["eu:0-8", /shard 8 does not exist/],
    ["eu:3-1", /ends before it starts/],
    ["eu:0-2,us:2", /shard 2 has two home regions/],
    ["eu", /use region:shard/],
  ])("refuses %s", (text, message) => {
    expect(() => parseShardRegions(text, 8)).toThrow(message);
  });
});

describe("planShards", () => {
  it("without home regions: every shard for everyone, ceil(shards / schedulers) each", () => {
    const plan = planShards({ holder: "x", region: "a", shardCount: 8, homes: new Map(), live: live(["x", "a", 0], ["y", "b", 0], ["z", "b", 0]), held: [] });
    expect(plan.pool).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(plan.fairShare).toBe(3);
    expect(plan.handBack).toEqual([]);
  });

  it("both regions alive: each scheduler shares its own region's shards only", () => {
    const nodes = live(["a1", "a", 0], ["a2", "a", 0], ["b1", "b", 4]);
    const a1 = planShards({ holder: "a1", region: "a", shardCount: 8, homes, live: nodes, held: [] });
    expect(a1.pool).toEqual([0, 1, 2, 3]);
    expect(a1.fairShare).toBe(2);
    const b1 = planShards({ holder: "b1", region: "b", shardCount: 8, homes, live: nodes, held: [4, 5, 6, 7] });
    expect(b1.pool).toEqual([4, 5, 6, 7]);
    expect(b1.fairShare).toBe(4);
  });

  it("region a down: b's schedulers may hold every shard, their own first, and share them", () => {
    const plan = planShards({ holder: "b1", region: "b", shardCount: 8, homes, live: live(["b1", "b", 2], ["b2", "b", 2]), held: [4, 5] });
    expect(plan.pool).toEqual([4, 5, 6, 7, 0, 1, 2, 3]);
    expect(plan.fairShare).toBe(4);
    expect(plan.handBack).toEqual([]);
  });

  it("region a back: b hands a's shards back, and a's scheduler counts as starving for them", () => {
    const nodes = live(["b1", "b", 8], ["a1", "a", 0]);
    const plan = planShards({ holder: "b1", region: "b", shardCount: 8, homes, live: nodes, held: [0, 1, 2, 3, 4, 5, 6, 7] });
    expect(plan.handBack).toEqual([0, 1, 2, 3]);
    expect(plan.pool).toEqual([4, 5, 6, 7]);
    expect(plan.fairShare).toBe(4);
    expect(plan.starving([0])).toBe(true);
    // but not for b's own shards, which a may not hold
    expect(plan.starving([4])).toBe(false);
  });
});
