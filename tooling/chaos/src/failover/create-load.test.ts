import { describe, expect, it } from "vitest";
import { countOutcomes, measureGap, type CreateLoad, type CreateTry } from "./create-load.js";
import type { Op } from "../workload.js";

const op = (key: string, jobId: string | null): Op => ({ key, tenant: "t", kind: "ok", phase: "p", createdAt: 0, jobId, createRetries: 0, cancel: null });
const t = (key: string, sentAt: number, doneAt: number, outcome: CreateTry["outcome"]): CreateTry => ({ key, sentAt, doneAt, outcome, status: null });

describe("measureGap", () => {
  it("RTO runs from the kill to the first acknowledgement of a create sent after it; refusals in between are counted", () => {
    const load = {
      ops: [op("a", "1"), op("b", "2"), op("c", "3"), op("d", null)],
      tries: [
        t("a", 900, 1_050, "acknowledged"), // sent before the kill: committed before it, not a recovery
        t("b", 1_100, 1_200, "database_unavailable"),
        t("c", 1_300, 4_300, "outcome_unknown"),
        t("d", 1_400, 1_500, "database_unavailable"),
        t("b", 5_000, 5_100, "acknowledged"), // the recovery: 4,100 ms after the kill
        t("c", 5_050, 5_200, "acknowledged"),
      ],
    } as unknown as CreateLoad;
    const gap = measureGap(load, 1_000);
    expect(gap.rtoMs).toBe(4_100);
    expect(gap.during.database_unavailable).toBe(2);
    expect(gap.during.outcome_unknown).toBe(1);
    expect(gap.during.acknowledged).toBe(1);
    expect(gap.acknowledgedAfterRetry).toBe(2); // b and c; d never was
    expect(gap.slowestRefusalMs).toBe(3_000);
    expect(countOutcomes(load.tries).acknowledged).toBe(3);
  });

  it("no acknowledgement after the kill: no RTO", () => {
    const load = { ops: [], tries: [t("a", 1_100, 1_200, "timeout")] } as unknown as CreateLoad;
    expect(measureGap(load, 1_000)).toMatchObject({ rtoMs: null, during: { timeout: 1 } });
  });
});
