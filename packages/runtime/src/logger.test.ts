import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";

describe("createLogger", () => {
  it("writes JSON lines and never writes secrets", async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on("data", (c) => chunks.push(String(c)));
    const logger = createLogger({ name: "test", destination: stream });
    logger.info(
      { headers: { authorization: "Bearer tk_secret_value" }, endpoint: { secret: "whsec_123" }, apiKey: "tk_abc" },
      "hello",
    );
    await new Promise((r) => setImmediate(r));
    const line: unknown = JSON.parse(chunks.join(""));
    expect(line).toMatchObject({ name: "test", level: "info", msg: "hello" });
    const text = chunks.join("");
    expect(text).not.toContain("tk_secret_value");
    expect(text).not.toContain("whsec_123");
    expect(text).not.toContain("tk_abc");
  });
});
