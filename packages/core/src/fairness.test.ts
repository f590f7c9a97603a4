import { describe, expect, it } from "vitest";
import { DeficitRoundRobin } from "./fairness.js";

describe("DeficitRoundRobin", () => {
  it("gives a quiet tenant its slot in the same allocation as a noisy tenant's backlog", () => {
    const drr = new DeficitRoundRobin();
    const alloc = drr.allocate(
      [
        { tenantId: "noisy", weight: 1, room: Infinity },
        { tenantId: "quiet", weight: 1, room: Infinity },
      ],
      100,
    );
    expect(alloc.get("quiet")).toBeGreaterThanOrEqual(1);
    expect((alloc.get("noisy") ?? 0) + (alloc.get("quiet") ?? 0)).toBe(100);
  });

  it("shares a saturated budget in proportion to weights", () => {
    const drr = new DeficitRoundRobin();
    const totals = new Map<string, number>();
    for (let i = 0; i < 50; i++) {
      const alloc = drr.allocate(
        [
          { tenantId: "a", weight: 1, room: Infinity },
          { tenantId: "b", weight: 3, room: Infinity },
        ],
        40,
      );
      for (const [k, v] of alloc) totals.set(k, (totals.get(k) ?? 0) + v);
    }
    expect(totals.get("a")).toBe(500);
    expect(totals.get("b")).toBe(1500);
  });

  it("never exceeds a tenant's room and gives the rest to others", () => {
    const drr = new DeficitRoundRobin();
    const alloc = drr.allocate(
      [
        { tenantId: "capped", weight: 10, room: 2 },
        { tenantId: "free", weight: 1, room: Infinity },
      ],
      30,
    );
    expect(alloc.get("capped")).toBe(2);
    expect(alloc.get("free")).toBe(28);
  });

  it("skips tenants with no room or zero budget", () => {
    const drr = new DeficitRoundRobin();
    expect(drr.allocate([{ tenantId: "x", weight: 1, room: 0 }], 10).size).toBe(0);
    expect(drr.allocate([{ tenantId: "x", weight: 1, room: 5 }], 0).size).toBe(0);
  });

  it("serves every one of many tenants when the budget allows one slot each", () => {
    const drr = new DeficitRoundRobin();
    const tenants = Array.from({ length: 50 }, (_, i) => ({ tenantId: `t${i}`, weight: 1, room: Infinity }));
    const alloc = drr.allocate(tenants, 50);
    expect(alloc.size).toBe(50);
    expect([...alloc.values()].every((v) => v === 1)).toBe(true);
  });

  it("with a budget smaller than the tenant count, rotates who goes first", () => {
    const drr = new DeficitRoundRobin();
    const tenants = Array.from({ length: 4 }, (_, i) => ({ tenantId: `t${i}`, weight: 1, room: Infinity }));
    const served = new Set<string>();
    for (let i = 0; i < 4; i++) for (const id of drr.allocate(tenants, 1).keys()) served.add(id);
    expect(served.size).toBe(4);
  });
});
