import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

const suite = useConsole();

describe("per-tenant admission rate (token bucket in Redis)", () => {
  it("answers a burst over the tenant's rate with 429 + Retry-After, while another tenant is unaffected", async () => {
    const noisy = await suite.h.createTenant({ admissionRate: 1, admissionBurst: 5 });
    const quiet = await suite.h.createTenant({ admissionRate: 1, admissionBurst: 5 });
    const noisyClient = suite.h.client(noisy.apiKey);
    const results = [];
    for (let i = 0; i < 8; i++) results.push(await noisyClient.call("createJob", { body: jobBody() }));
    const statuses = results.map((r) => r.status);
    // The burst of 5 passes (plus at most one token refilled while the loop ran), the rest is refused.
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(5);
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(6);
    const refused = results.find((r) => r.status === 429)!;
    if (refused.ok) throw new Error("expected a problem");
    expect(refused.problem.type).toBe("https://tick.dev/problems/rate-limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("ratelimit-limit")).toBe("5");
    expect(refused.headers.get("ratelimit-remaining")).toBe("0");
    const created = await suite.h.prisma.job.count({ where: { tenantId: noisy.id } });
    expect(created).toBe(statuses.filter((s) => s === 201).length);

    const quietRes = await suite.h.client(quiet.apiKey).call("createJob", { body: jobBody() });
    expect(quietRes.status).toBe(201);
    expect(quietRes.headers.get("ratelimit-remaining")).toBe("4");
    // One token taken at 1 token/s: the bucket is full again in about a second, and RateLimit-Reset says so.
    expect(Number(quietRes.headers.get("ratelimit-reset"))).toBe(1);
    // The empty bucket of the noisy tenant needs about five seconds to fill.
    expect(Number(refused.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(4);
    expect(Number(refused.headers.get("ratelimit-reset"))).toBeLessThanOrEqual(5);
  });

  it("a batch takes one token per job; items past the bucket get 429 per item", async () => {
    const tenant = await suite.h.createTenant({ admissionRate: 0.1, admissionBurst: 3 });
    const res = await suite.h.client(tenant.apiKey).call("createJobsBatch", { body: { jobs: [jobBody(), jobBody(), jobBody(), jobBody(), jobBody()] } });
    if (!res.ok) throw new Error("expected success");
    expect(res.body.results.map((r) => r.status)).toEqual([201, 201, 201, 429, 429]);
    expect(await suite.h.prisma.job.count({ where: { tenantId: tenant.id } })).toBe(3);
  });

  it("fails open when Redis is unreachable: creation continues, the Postgres quota still holds", async () => {
    const tenant = await suite.h.createTenant({ admissionRate: 1, admissionBurst: 1, maxPendingJobs: 2 });
    const client = suite.h.client(tenant.apiKey);
    suite.h.redisProxy.cut();
    try {
      const first = await client.call("createJob", { body: jobBody() });
      const second = await client.call("createJob", { body: jobBody() });
      const third = await client.call("createJob", { body: jobBody() });
      // Without Redis the rate limit (burst 1) is skipped ...
      expect([first.status, second.status]).toEqual([201, 201]);
      expect(first.headers.get("ratelimit-limit")).toBeNull();
      // ... but the pending-job quota (2) is enforced by Postgres.
      expect(third.status).toBe(429);
      if (third.ok) throw new Error("expected a problem");
      expect(third.problem.type).toBe("https://tick.dev/problems/quota-exceeded");
    } finally {
      suite.h.redisProxy.restore();
    }
    expect(await suite.h.prisma.job.count({ where: { tenantId: tenant.id } })).toBe(2);
  });
});

itConformsToOpenApi(suite);
