import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, decideIdempotency, idempotencyKeySchema } from "./idempotency.js";
import { requestHash } from "./node.js";

describe("idempotency key schema", () => {
  it.each([
    ["a", true],
    ["x".repeat(255), true],
    ["", false],
    ["x".repeat(256), false],
  ])("%j valid: %s", (key, ok) => {
    expect(idempotencyKeySchema.safeParse(key).success).toBe(ok);
  });

  it("refuses non-strings with the same message as a bad length", () => {
    const result = idempotencyKeySchema.safeParse(42);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe("must be a string of 1 to 255 characters");
    expect(idempotencyKeySchema.safeParse("").error?.issues[0]?.message).toBe("must be a string of 1 to 255 characters");
  });
});

describe("request hash", () => {
  const request = { queue: "default", target: { url: "https://example.com/x", method: "POST", headers: { b: "2", a: "1" } }, priority: 0 };

  it("does not change with key order or whitespace", () => {
    const reordered = { priority: 0, target: { headers: { a: "1", b: "2" }, method: "POST", url: "https://example.com/x" }, queue: "default" };
    const reformatted = JSON.parse(JSON.stringify(request, null, 4)) as unknown;
    expect(requestHash(reordered)).toBe(requestHash(request));
    expect(requestHash(reformatted)).toBe(requestHash(request));
    expect(canonicalJson(reordered)).toBe(canonicalJson(request));
  });

  it("ignores undefined members (an omitted optional field and an explicit undefined are the same request)", () => {
    expect(requestHash({ ...request, runAt: undefined })).toBe(requestHash(request));
  });

  it("changes when any value changes, however deep", () => {
    const base = requestHash(request);
    expect(requestHash({ ...request, priority: 1 })).not.toBe(base);
    expect(requestHash({ ...request, target: { ...request.target, headers: { a: "1", b: "3" } } })).not.toBe(base);
    expect(requestHash({ ...request, queue: "other" })).not.toBe(base);
    // A value's type counts: "1" is not 1, and array order is meaningful.
    expect(requestHash({ a: "1" })).not.toBe(requestHash({ a: 1 }));
    expect(requestHash({ a: [1, 2] })).not.toBe(requestHash({ a: [2, 1] }));
  });

  it("is SHA-256 hex of the canonical JSON (the form stored with existing keys)", () => {
    const expected = createHash("sha256").update('{"a":"1","b":{"c":[1,"x",null]}}').digest("hex");
    expect(requestHash({ b: { c: [1, "x", null] }, a: "1" })).toBe(expected);
  });
});

describe("decideIdempotency", () => {
  it.each([
    [null, "h", "fresh"],
    [{ requestHash: "h", expired: false }, "h", "replay"],
    [{ requestHash: "other", expired: false }, "h", "conflict"],
    [{ requestHash: null, expired: false }, "h", "conflict"],
    [{ requestHash: "h", expired: true }, "h", "expired"],
    [{ requestHash: "other", expired: true }, "h", "expired"],
  ] as const)("stored %j, request %s → %s", (stored, hash, decision) => {
    expect(decideIdempotency(stored, hash)).toBe(decision);
  });
});
