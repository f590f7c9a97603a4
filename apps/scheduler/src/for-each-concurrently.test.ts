import { describe, expect, it } from "vitest";
import { forEachConcurrently } from "./scheduler.js";

describe("forEachConcurrently", () => {
  it("runs every item, never more than the limit at once", async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await forEachConcurrently([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5 + (n % 3) * 5));
      done.push(n);
      running--;
    });
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it("rejects with the first error after the started calls settle, and starts nothing more", async () => {
    const started: number[] = [];
    let settled = 0;
    const run = forEachConcurrently([1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      await new Promise((r) => setTimeout(r, n === 1 ? 1 : 20));
      settled++;
      if (n === 1) throw new Error("shard 1 failed");
    });
    await expect(run).rejects.toThrow("shard 1 failed");
    expect(started).toEqual([1, 2]);
    expect(settled).toBe(2);
  });

  it("does nothing for no items", async () => {
    let calls = 0;
    await forEachConcurrently([], 4, async () => {
      calls++;
    });
    expect(calls).toBe(0);
  });
});
