import { afterEach, describe, expect, it } from "vitest";
import { installClockSkew } from "./clock-skew.js";

const RealDate = Date;
afterEach(() => {
  globalThis.Date = RealDate;
});

describe("installClockSkew", () => {
  it("moves Date.now and new Date() by the skew, leaves explicit dates alone", () => {
    const before = RealDate.now();
    installClockSkew(60_000);
    expect(Date.now() - before).toBeGreaterThanOrEqual(60_000);
    expect(new Date().getTime() - before).toBeGreaterThanOrEqual(60_000);
    expect(new Date(0).getTime()).toBe(0);
    expect(new Date("2026-01-01T00:00:00Z").toISOString()).toBe("2026-01-01T00:00:00.000Z");
  });

  it("does nothing without a skew", () => {
    installClockSkew(0);
    expect(Date).toBe(RealDate);
  });
});
