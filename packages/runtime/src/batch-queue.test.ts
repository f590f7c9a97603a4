import { describe, expect, it } from "vitest";
import { createBatchQueue } from "./batch-queue.js";

/** A batch runner whose statements the test completes by hand, recording each batch it was given. */
function manualRunner() {
  const batches: number[][] = [];
  const pending: (() => void)[] = [];
  return {
    batches,
    finishNext: () => pending.shift()?.(),
    runBatch: (items: number[]) => {
      batches.push(items);
      return new Promise<number[]>((resolve) => pending.push(() => resolve(items.map((i) => i * 10))));
    },
  };
}

/** A few event-loop turns: a returned batch's follow-up is planned for the turn after it settles. */
const turn = async () => {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
};

describe("batch queue (group commit)", () => {
  it("sends the first item at once, gathers what arrives while a batch is in flight, and sends that together when it returns", async () => {
    const runner = manualRunner();
    const q = createBatchQueue({ maxBatch: 100, runBatch: runner.runBatch, runOne: async (i: number) => i });
    const first = q.submit(1);
    await turn();
    expect(runner.batches).toEqual([[1]]); // no timer: an idle queue pays one statement's latency
    const rest = [q.submit(2), q.submit(3), q.submit(4)];
    await turn();
    expect(runner.batches).toEqual([[1]]); // one in flight: the others wait for it
    runner.finishNext();
    expect(await first).toBe(10);
    await turn();
    expect(runner.batches).toEqual([[1], [2, 3, 4]]);
    runner.finishNext();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
  });

  it("splits what waited into batches of at most maxBatch, within the in-flight limit", async () => {
    const runner = manualRunner();
    const q = createBatchQueue({ maxBatch: 2, maxInFlight: 2, runBatch: runner.runBatch, runOne: async (i: number) => i });
    const all = [1, 2, 3, 4, 5, 6].map((i) => q.submit(i));
    await turn();
    expect(runner.batches).toEqual([[1, 2], [3, 4]]);
    runner.finishNext();
    await turn();
    expect(runner.batches).toEqual([[1, 2], [3, 4], [5, 6]]);
    runner.finishNext();
    runner.finishNext();
    expect(await Promise.all(all)).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it("settles a failed batch item by item through runOne, and drain waits for everything", async () => {
    let calls = 0;
    const q = createBatchQueue({
      maxBatch: 10,
      runBatch: async () => {
        calls++;
        throw new Error("connection reset");
      },
      runOne: async (i: number) => {
        if (i === 2) throw new Error("bad row");
        return -i;
      },
    });
    const results = [1, 2, 3].map((i) => q.submit(i).catch((err: Error) => err.message));
    await q.drain();
    expect(await Promise.all(results)).toEqual([-1, "bad row", -3]);
    expect(calls).toBe(1);
  });

  it("answers every item of a failed batch with its error when retryOneByOne says the batch's fate is unknown", async () => {
    let ones = 0;
    const q = createBatchQueue({
      maxBatch: 10,
      runBatch: async (items: number[]) => {
        if (items.includes(2)) throw new Error(items.includes(3) ? "commit cut" : "bad row");
        return items.map((i) => -i);
      },
      runOne: async (i: number) => {
        ones++;
        return -i;
      },
      retryOneByOne: (err) => (err as Error).message !== "commit cut",
    });
    const cut = [2, 3].map((i) => q.submit(i).catch((err: Error) => err.message));
    await q.drain();
    expect(await Promise.all(cut)).toEqual(["commit cut", "commit cut"]);
    expect(ones).toBe(0);
    const bad = [1, 2].map((i) => q.submit(i).catch((err: Error) => err.message));
    await q.drain();
    expect(await Promise.all(bad)).toEqual([-1, -2]);
    expect(ones).toBe(2);
  });
});
