import { describe, it, expect } from "vitest";
import { z } from "zod";
import { durationSchema, parseDuration } from "./duration.js";

describe("parseDuration", () => {
  it.each([
    ["250ms", 250],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["2d", 172_800_000],
    ["1500", 1500],
    ["0", 0],
    ["0s", 0],
    [" 10s ", 10_000],
  ])("%s → %i ms", (input, expected) => {
    expect(parseDuration(input)).toBe(expected);
  });

  it.each(["", "abc", "-5s", "1.5s", "5 m", "5M", "10w", "s", "1e3", "9999999999999999d"])(
    "rejects %j with a message naming the input",
    (input) => {
      expect(() => parseDuration(input)).toThrow(`Invalid duration ${JSON.stringify(input)}`);
    },
  );
});

describe("durationSchema", () => {
  it.each([
    ["30s", 30_000],
    ["1500", 1500],
    [250, 250],
    [0, 0],
  ] as const)("%j → %i ms", (input, expected) => {
    expect(durationSchema.parse(input)).toBe(expected);
  });

  it.each([["-1s"], ["soon"], [-1], [1.5], [null], [true]] as const)("refuses %j", (input) => {
    expect(durationSchema.safeParse(input).success).toBe(false);
  });

  it("reports the bad value inside an env-style object schema", () => {
    const schema = z.object({ LEASE_TTL: durationSchema });
    const result = schema.safeParse({ LEASE_TTL: "30 seconds" });
    expect(result.success).toBe(false);
    const messages = result.error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("\n") ?? "";
    expect(messages).toContain('LEASE_TTL: Invalid duration "30 seconds"');
  });

  it.each([
    [-1, "Invalid duration -1"],
    [null, 'must be a duration like "30s"'],
  ] as const)("explains why %j is refused", (input, message) => {
    expect(durationSchema.safeParse(input).error?.issues[0]?.message).toContain(message);
  });
});
