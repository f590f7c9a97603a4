import os from "node:os";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";
import { startHealthServer, type HealthServer } from "./health-server.js";
import { createMetricsRegistry } from "./metrics.js";

const logger = createLogger({ name: "test", level: "silent", destination: new PassThrough() });
let server: HealthServer | undefined;
afterEach(async () => server?.close());

describe("health server", () => {
  it("answers liveness, readiness per check, and metrics", async () => {
    let dbUp = true;
    server = await startHealthServer({
      port: 0,
      host: "127.0.0.1",
      logger,
      registry: createMetricsRegistry("test"),
      checks: {
        database: async () => {
          if (!dbUp) throw new Error("connection refused");
        },
      },
    });
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    dbUp = false;
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: "not_ready", failed: { database: "connection refused" } });

    dbUp = true;
    server.markShuttingDown();
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('process_cpu_user_seconds_total{app="test"}');
  });

  it("listens only on the address it is given: bound to loopback, the machine's other addresses refuse", async () => {
    server = await startHealthServer({ port: 0, host: "127.0.0.1", logger, checks: {} });
    expect(server.host).toBe("127.0.0.1");
    expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
    const external = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal);
    if (!external) return; // a machine with loopback only has no other address to try
    await expect(fetch(`http://${external.address}:${server.port}/healthz`)).rejects.toThrow();
  });

  it("fails readiness when a check hangs", async () => {
    server = await startHealthServer({
      port: 0,
      host: "127.0.0.1",
      logger,
      checkTimeoutMs: 50,
      checks: { redis: () => new Promise(() => {}) },
    });
    const res = await fetch(`http://127.0.0.1:${server.port}/readyz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { failed: Record<string, string> }).failed.redis).toMatch(/timed out/);
  });
});
