import { describe, expect, it } from "vitest";
import { createCallSlots } from "./call-slots.js";

describe("call slots", () => {
  it("gives at most `size` slots at once and serves waiters lowest rank first, then in arrival order", async () => {
    const slots = createCallSlots(2);
    const a = await slots.acquire(5);
    await slots.acquire(5);
    expect(slots.inUse).toBe(2);
    const order: string[] = [];
    const waiters = [
      slots.acquire(3000).then((release) => order.push("noisy-1") && release),
      slots.acquire(3000).then((release) => order.push("noisy-2") && release),
      slots.acquire(1000).then((release) => order.push("quiet") && release),
    ];
    expect(slots.waiting).toBe(3);
    a();
    a(); // idempotent: releasing twice frees one slot
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(["quiet"]);
    expect(slots.inUse).toBe(2);
    const released = await waiters[2]!;
    (released as unknown as () => void)();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(["quiet", "noisy-1"]);
    expect(slots.waiting).toBe(1);
  });
});

describe("call slots' occupancy", () => {
  it("integrates slots held and attempts waiting over time, exactly, including holds still running", async () => {
    let t = 0;
    const slots = createCallSlots(2, () => t);
    const a = await slots.acquire();
    t = 1_000; // 1 slot for 1 s
    const b = await slots.acquire();
    t = 3_000; // 2 slots for 2 s
    const waiter = slots.acquire();
    expect(slots.waiting).toBe(1);
    t = 3_500; // 2 slots and 1 waiter for 0.5 s
    a(); // hands its slot to the waiter: still 2 held
    const c = await waiter;
    t = 4_000; // 2 slots for 0.5 s
    expect(slots.totals()).toEqual({ busySeconds: 1 + 4 + 1 + 1, waitingSeconds: 0.5 });
    b();
    c();
    t = 10_000; // nothing held
    expect(slots.totals()).toEqual({ busySeconds: 7, waitingSeconds: 0.5 });
    // Busy seconds over a window divided by its length is the mean slots busy in it: 7 s of slots in 10 s.
    expect(slots.totals().busySeconds / 10).toBeCloseTo(0.7);
  });
});
