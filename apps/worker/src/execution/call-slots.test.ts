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
