import { describe, expect, it } from "vitest";
import type { Delivery } from "../sink.js";
import { fencingAcrossRestore } from "./fencing-across-restore.js";

const RESTORED_AT = 10_000;
const d = (jobId: string, attemptId: string, fencingToken: number, receivedAt: number): Delivery => ({
  key: `key-${jobId}`,
  jobId,
  attemptId,
  fencingToken,
  path: "/ok",
  receivedAt,
  at: receivedAt + 5,
  status: 200,
});

describe("fencingAcrossRestore", () => {
  it("passes a fenced restore: the restored database's tokens are above everything seen before, an in-flight attempt sent again included", () => {
    const floor = 1_780_000_000_000_000;
    const verdict = fencingAcrossRestore(
      [
        d("j1", "a1", 1, 1_000),
        d("j1", "a1", 1, 1_500), // the same attempt delivered twice: not a reuse
        d("j1", "a2", 2, 9_000), // after the restore point, lost with it
        d("j1", "a1", floor, 12_000), // a1 was in flight at the restore point: sent again under its advanced token
        d("j1", "a3", floor + 1, 13_000),
        d("j2", "b1", floor, 12_500), // never delivered before the restore
      ],
      RESTORED_AT,
    );
    expect(verdict).toEqual({ checked: 6, reused: [], backwards: [] });
  });

  it("reports a token handed out again for another attempt, and one not above what was seen before the restore", () => {
    const verdict = fencingAcrossRestore(
      [
        d("j1", "a1", 1, 1_000),
        d("j1", "a2", 2, 9_000), // after the restore point, so the restored database forgot it
        d("j1", "a3", 2, 12_000), // what an unfenced restore does: token 2 again, for another attempt
        d("j2", "b1", 1, 9_500),
        d("j2", "b1", 1, 12_500), // the same attempt sent again with its old token: not above what the target saw
      ],
      RESTORED_AT,
    );
    expect(verdict.reused).toEqual(["job j1: fencing token 2 for 2 attempts (a2, a3)"]);
    expect(verdict.backwards).toEqual([
      "job j1: attempt a3 sent token 2 after the restore; 2 was seen before it",
      "job j2: attempt b1 sent token 1 after the restore; 1 was seen before it",
    ]);
  });
});
