import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

const suite = useConsole();

describe("database unreachable (S3)", () => {
  it("answers 503 + Retry-After and creates nothing; a retry with the same key after recovery creates exactly one job", async () => {
    const client = suite.h.client(suite.a.apiKey);
    // Warm the console's pools so the cut breaks live connections, not just new ones.
    expect((await client.call("listJobs", {})).status).toBe(200);

    suite.h.dbProxy.cut();
    let outage;
    try {
      outage = await client.call("createJob", { body: jobBody(), idempotencyKey: "during-outage" });
      const readDuringOutage = await client.call("listJobs", {});
      expect(readDuringOutage.status).toBe(503);
    } finally {
      suite.h.dbProxy.restore();
    }
    expect(outage.status).toBe(503);
    if (outage.ok) throw new Error("expected a problem");
    expect(outage.problem.type).toBe("https://tick.dev/problems/database-unavailable");
    expect(Number(outage.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Nothing was written, and nothing is buffered anywhere to be written later.
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } })).toBe(0);

    const retry = await client.call("createJob", { body: jobBody(), idempotencyKey: "during-outage" });
    expect(retry.status).toBe(201);
    const again = await client.call("createJob", { body: jobBody(), idempotencyKey: "during-outage" });
    expect(again.status).toBe(200);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "during-outage" } })).toBe(1);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } })).toBe(1);
  });

  it("readiness reports the database down and back", async () => {
    suite.h.dbProxy.cut();
    try {
      const res = await fetch(`${suite.h.baseUrl}/readyz`);
      expect(res.status).toBe(503);
      expect((await res.json()).failed).toHaveProperty("database");
    } finally {
      suite.h.dbProxy.restore();
    }
    expect((await fetch(`${suite.h.baseUrl}/readyz`)).status).toBe(200);
  });
});

itConformsToOpenApi(suite);
