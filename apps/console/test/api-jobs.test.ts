import { beforeAll, describe, expect, it } from "vitest";
import { createPool, sql } from "@tick/db";
import { waitFor } from "@tick/testing";
import { itConformsToOpenApi, jobBody, type TestTenant, useConsole } from "./harness";

const suite = useConsole();
let b: TestTenant;
beforeAll(async () => {
  b = await suite.h.createTenant();
});

const problemType = (code: string) => `https://tick.dev/problems/${code}`;

describe("POST /api/v1/jobs", () => {
  it("creates a job durably and returns it (201, Location)", async () => {
    const res = await suite.h.client(suite.a.apiKey).call("createJob", { body: jobBody({ priority: 5, metadata: { order: 42 } }) });
    expect(res.status).toBe(201);
    if (!res.ok) throw new Error("expected success");
    expect(res.headers.get("location")).toBe(`/api/v1/jobs/${res.body.id}`);
    expect(res.body).toMatchObject({ status: "scheduled", version: 1, queue: "default", priority: 5, attemptCount: 0, maxAttempts: 5 });
    expect(res.body.metadata).toEqual({ order: 42 });
    const row = await suite.h.prisma.job.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.tenantId).toBe(suite.a.id);
    // due time comes from the database clock: created_at + delay
    expect(row.dueAt.getTime() - row.createdAt.getTime()).toBeGreaterThanOrEqual(3_600_000 - 50);
    expect(row.dueAt.getTime() - row.createdAt.getTime()).toBeLessThan(3_600_000 + 2_000);
  });

  it("replays the original job for the same Idempotency-Key and body, refuses a different body", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const first = await client.call("createJob", { body: jobBody(), idempotencyKey: "order-1" });
    expect(first.status).toBe(201);
    const again = await client.call("createJob", { body: jobBody(), idempotencyKey: "order-1" });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    if (!first.ok || !again.ok) throw new Error("expected success");
    expect(again.body.id).toBe(first.body.id);

    const other = await client.call("createJob", { body: jobBody({ priority: 9 }), idempotencyKey: "order-1" });
    expect(other.status).toBe(422);
    if (other.ok) throw new Error("expected a problem");
    expect(other.problem.type).toBe(problemType("idempotency-key-reused"));
    expect(other.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "order-1" } })).toBe(1);

    // Keys are per tenant: tenant B may use the same key for its own job.
    const forB = await suite.h.client(b.apiKey).call("createJob", { body: jobBody(), idempotencyKey: "order-1" });
    expect(forB.status).toBe(201);
  });

  it("keeps replaying a key after its job moved to history, and releases the key once its window has passed", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const first = await client.call("createJob", { body: jobBody(), idempotencyKey: "moved-1" });
    if (!first.ok) throw new Error("expected success");
    const pool = createPool(suite.h.db.url, { max: 1 });
    try {
      // The job ran long ago and the maintenance loop moved it (and its key's job row) out of the hot table.
      await pool.query(`UPDATE jobs SET status = 'succeeded', finished_at = now() - interval '2 minutes' WHERE id = $1`, [first.body.id]);
      await sql.ensureHistoryPartitionsFor(pool, [new Date(Date.now() - 120_000).toISOString().slice(0, 10)]);
      expect(await sql.moveJobsToHistory(pool, [first.body.id])).toMatchObject({ jobs: 1 });
      expect((await pool.query(`SELECT 1 FROM jobs WHERE id = $1`, [first.body.id])).rowCount).toBe(0);

      const again = await client.call("createJob", { body: jobBody(), idempotencyKey: "moved-1" });
      expect(again.status).toBe(200);
      if (!again.ok) throw new Error("expected success");
      expect(again.body).toMatchObject({ id: first.body.id, status: "succeeded" });
      const reused = await client.call("createJob", { body: jobBody({ priority: 9 }), idempotencyKey: "moved-1" });
      expect(reused.status).toBe(422);
      // The job itself is still readable from history.
      const read = await client.call("getJob", { params: { id: first.body.id } });
      expect(read.status).toBe(200);

      // Past the promised window the key is free again: the same request makes a new job.
      await pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = 'moved-1'`, [suite.a.id]);
      const fresh = await client.call("createJob", { body: jobBody(), idempotencyKey: "moved-1" });
      expect(fresh.status).toBe(201);
      if (!fresh.ok) throw new Error("expected success");
      expect(fresh.body.id).not.toBe(first.body.id);
      const again2 = await client.call("createJob", { body: jobBody(), idempotencyKey: "moved-1" });
      if (!again2.ok) throw new Error("expected success");
      expect(again2.body.id).toBe(fresh.body.id);
    } finally {
      await pool.end();
    }
  });

  it("converges 20 concurrent identical creates on one job", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => client.call("createJob", { body: jobBody({ priority: 3 }), idempotencyKey: "burst-1" })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    const ids = new Set(results.map((r) => (r.ok ? r.body.id : null)));
    expect(ids.size).toBe(1);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "burst-1" } })).toBe(1);
  });

  it("answers each of a burst of concurrent creates on its own, though they share transactions", async () => {
    // 60 requests at once: 40 distinct keys (20 with a traceparent of their own), 10 repeats of one key,
    // one of them with another body, 5 for a queue that does not exist and 4 without a key.
    const trace = (i: number) => `00-${(i + 1).toString(16).padStart(32, "a")}-${"b".repeat(16)}-01`;
    const send = (body: unknown, headers: Record<string, string>) =>
      fetch(`${suite.h.baseUrl}/api/v1/jobs`, {
        method: "POST",
        headers: { authorization: `Bearer ${suite.a.apiKey}`, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as { id: string; type?: string; trace: { traceparent: string } } }));
    const burst = [
      ...Array.from({ length: 40 }, (_, i) => send(jobBody({ metadata: { i } }), { "idempotency-key": `group-${i}`, ...(i < 20 ? { traceparent: trace(i) } : {}) })),
      ...Array.from({ length: 9 }, () => send(jobBody({ priority: 4 }), { "idempotency-key": "group-shared" })),
      send(jobBody({ priority: 5 }), { "idempotency-key": "group-shared" }),
      ...Array.from({ length: 5 }, (_, i) => send(jobBody({ queue: "nope" }), { "idempotency-key": `group-noqueue-${i}` })),
      ...Array.from({ length: 4 }, () => send(jobBody({ metadata: { unkeyed: true } }), {})),
    ];
    const answers = await Promise.all(burst);
    const distinct = answers.slice(0, 40);
    expect(distinct.map((a) => a.status)).toEqual(Array(40).fill(201));
    expect(new Set(distinct.map((a) => a.body.id)).size).toBe(40);
    distinct.slice(0, 20).forEach((a, i) => expect(a.body.trace.traceparent).toBe(trace(i)));
    expect(new Set(distinct.slice(20).map((a) => a.body.trace.traceparent.slice(3, 35))).size).toBe(20); // a new trace each

    const shared = answers.slice(40, 50);
    const sharedJobs = await suite.h.prisma.job.findMany({ where: { tenantId: suite.a.id, idempotencyKey: "group-shared" } });
    expect(sharedJobs).toHaveLength(1);
    // Whichever body committed first owns the key: its repeats replay the job, the other body is refused.
    const winnerPriority = sharedJobs[0]!.priority;
    for (const [i, a] of shared.entries()) {
      const priority = i < 9 ? 4 : 5;
      if (priority === winnerPriority) {
        expect([200, 201]).toContain(a.status);
        expect(a.body.id).toBe(sharedJobs[0]!.id);
      } else {
        expect(a.status).toBe(422);
        expect(a.body.type).toBe(problemType("idempotency-key-reused"));
      }
    }
    expect(shared.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.slice(50, 55).map((a) => [a.status, a.body.type])).toEqual(Array(5).fill([422, problemType("validation-failed")]));
    expect(answers.slice(55).map((a) => a.status)).toEqual([201, 201, 201, 201]);

    // They went in fewer transactions than requests (rows one transaction wrote share its xmin).
    const ids = [...distinct, ...answers.slice(55)].map((a) => a.body.id);
    const [{ transactions }] = await suite.h.prisma.$queryRawUnsafe<[{ transactions: number }]>(
      `SELECT count(DISTINCT xmin::text)::int AS transactions FROM jobs WHERE id = ANY($1::uuid[])`,
      ids,
    );
    expect(transactions).toBeLessThan(ids.length);
  });

  it.each([
    ["missing target", {}, 422, "validation-failed"],
    ["bad method", jobBody({ target: { method: "TRACE", url: "https://93.184.216.34/" } }), 422, "validation-failed"],
    ["unknown field (typo)", jobBody({ delay: 5 }), 422, "validation-failed"],
    ["runAt and delayMs together", jobBody({ runAt: "2030-01-01T00:00:00Z", delayMs: 5 }), 422, "validation-failed"],
    ["reserved header", jobBody({ target: { url: "https://93.184.216.34/", headers: { Host: "x" } } }), 422, "validation-failed"],
    ["unknown queue", jobBody({ queue: "nope" }), 422, "validation-failed"],
    ["ftp target", jobBody({ target: { url: "ftp://93.184.216.34/x" } }), 422, "target-not-allowed"],
    ["loopback target", jobBody({ target: { url: "http://127.0.0.1:8080/x" } }), 422, "target-not-allowed"],
    ["localhost by name", jobBody({ target: { url: "http://localhost/x" } }), 422, "target-not-allowed"],
    ["private target", jobBody({ target: { url: "http://10.1.2.3/x" } }), 422, "target-not-allowed"],
    ["cloud metadata", jobBody({ target: { url: "http://169.254.169.254/latest/meta-data" } }), 422, "target-not-allowed"],
    ["IPv6 loopback", jobBody({ target: { url: "http://[::1]/x" } }), 422, "target-not-allowed"],
    ["decimal loopback", jobBody({ target: { url: "http://2130706433/x" } }), 422, "target-not-allowed"],
    ["credentials in URL", jobBody({ target: { url: "https://u:p@93.184.216.34/x" } }), 422, "target-not-allowed"],
    ["private callback", jobBody({ callbackUrl: "http://192.168.1.10/done" }), 422, "target-not-allowed"],
  ])("refuses %s with %i %s and creates nothing", async (_name, body, status, type) => {
    const before = await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } });
    const res = await suite.h.client(suite.a.apiKey).call("createJob", { body });
    expect(res.status).toBe(status);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe(problemType(type));
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } })).toBe(before);
  });

  it("says plainly why a target is refused: of the address itself, or of what the name resolved to", async () => {
    const refusal = async (url: string) => {
      const res = await suite.h.client(suite.a.apiKey).call("createJob", { body: jobBody({ target: { url } }) });
      if (res.ok) throw new Error("expected a problem");
      return res.problem.detail;
    };
    expect(await refusal("http://127.0.0.1:8080/x")).toBe("target.url: address 127.0.0.1 is in a blocked range (loopback)");
    expect(await refusal("http://localhost/x")).toMatch(/^target\.url: localhost resolves to (127\.0\.0\.1|::1), which is in a blocked range \(loopback\)$/);
  });

  it("refuses a body that is not JSON (400), not declared JSON (415) or too large (413)", async () => {
    const post = (body: string, type = "application/json") =>
      fetch(`${suite.h.baseUrl}/api/v1/jobs`, { method: "POST", headers: { authorization: `Bearer ${suite.a.apiKey}`, "content-type": type }, body });
    const cases: [Response, number, string][] = [
      [await post("{not json"), 400, "bad-request"],
      [await post("{}", "text/plain"), 415, "unsupported-media-type"],
      [await post(JSON.stringify(jobBody({ metadata: { pad: "x".repeat(1_100_000) } }))), 413, "payload-too-large"],
    ];
    for (const [res, status, type] of cases) {
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { type: string }).type).toBe(problemType(type));
    }
  });

  it("enforces the pending-job quota in Postgres", async () => {
    const small = await suite.h.createTenant({ maxPendingJobs: 3 });
    const client = suite.h.client(small.apiKey);
    for (let i = 0; i < 3; i++) expect((await client.call("createJob", { body: jobBody() })).status).toBe(201);
    const over = await client.call("createJob", { body: jobBody() });
    expect(over.status).toBe(429);
    if (over.ok) throw new Error("expected a problem");
    expect(over.problem.type).toBe(problemType("quota-exceeded"));
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await suite.h.prisma.job.count({ where: { tenantId: small.id } })).toBe(3);
  });

  it("folds the quota's count rows when they pile up, and the quota holds across the fold", async () => {
    const small = await suite.h.createTenant({ maxPendingJobs: 2 });
    const client = suite.h.client(small.apiKey);
    expect((await client.call("createJob", { body: jobBody() })).status).toBe(201);
    // 600 rows that sum to 0, as 300 creates and their 300 finishes leave them when no scheduler folds them.
    await suite.h.prisma.$executeRaw`INSERT INTO tenant_live_job_counts (shard, tenant_id, n)
      SELECT t.shard, t.id, CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END FROM tenants t, generate_series(1, 600) g WHERE t.id = ${small.id}::uuid`;
    const rows = async () => (await suite.h.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM tenant_live_job_counts WHERE tenant_id = ${small.id}::uuid`)[0]!.n;
    expect(await rows()).toBe(601);
    expect((await client.call("createJob", { body: jobBody() })).status).toBe(201);
    await waitFor(async () => (await rows()) <= 2, { description: "the console folded the tenant's count rows" });
    expect((await client.call("createJob", { body: jobBody() })).status).toBe(429);
    expect(await suite.h.prisma.job.count({ where: { tenantId: small.id } })).toBe(2);
  });
});

describe("POST /api/v1/jobs/batch", () => {
  it("creates, replays and refuses item by item, in order", async () => {
    const res = await suite.h.client(suite.a.apiKey).call("createJobsBatch", {
      body: {
        jobs: [
          { ...jobBody(), idempotencyKey: "batch-1" },
          { ...jobBody(), idempotencyKey: "batch-1" },
          { ...jobBody({ target: { url: "http://10.0.0.1/" } }) },
          { target: {} },
          { ...jobBody({ priority: 1 }), idempotencyKey: "batch-1" },
          { ...jobBody(), idempotencyKey: 7 },
          jobBody(),
          // A URL is checked once per request: every item that names a refused one is refused, as target or as callback.
          { ...jobBody({ target: { url: "http://10.0.0.1/" } }) },
          { ...jobBody(), callbackUrl: "http://10.0.0.1/" },
        ],
      },
    });
    expect(res.status).toBe(200);
    if (!res.ok) throw new Error("expected success");
    const results = res.body.results;
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(results.map((r) => r.status)).toEqual([201, 200, 422, 422, 422, 422, 201, 422, 422]);
    expect(results[1]!.job!.id).toBe(results[0]!.job!.id);
    expect(results[2]!.error!.type).toBe(problemType("target-not-allowed"));
    expect(results[7]!.error!.type).toBe(problemType("target-not-allowed"));
    expect(results[8]!.error!.type).toBe(problemType("target-not-allowed"));
    expect(results[8]!.error!.detail).toMatch(/^callbackUrl: /);
    expect(results[4]!.error!.type).toBe(problemType("idempotency-key-reused"));
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "batch-1" } })).toBe(1);
  });

  it("creates 1,000 jobs in one call", async () => {
    const tenant = await suite.h.createTenant();
    const res = await suite.h.client(tenant.apiKey).call("createJobsBatch", {
      body: { jobs: Array.from({ length: 1000 }, (_, i) => ({ ...jobBody(), idempotencyKey: `bulk-${i}` })) },
    });
    expect(res.status).toBe(200);
    if (!res.ok) throw new Error("expected success");
    expect(res.body.results.every((r) => r.status === 201)).toBe(true);
    expect(await suite.h.prisma.job.count({ where: { tenantId: tenant.id } })).toBe(1000);
  });

  it("answers keys used before from their jobs, and takes a key past its window again", async () => {
    const tenant = await suite.h.createTenant();
    const client = suite.h.client(tenant.apiKey);
    const first = await client.call("createJobsBatch", {
      body: { jobs: ["used-1", "used-2", "used-3"].map((idempotencyKey) => ({ ...jobBody(), idempotencyKey })) },
    });
    if (!first.ok) throw new Error("expected success");
    const pool = createPool(suite.h.db.url, { max: 1 });
    try {
      await pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = 'used-3'`, [tenant.id]);
    } finally {
      await pool.end();
    }
    const res = await client.call("createJobsBatch", {
      body: {
        jobs: [
          { ...jobBody(), idempotencyKey: "used-1" },
          { ...jobBody({ priority: 9 }), idempotencyKey: "used-2" },
          { ...jobBody(), idempotencyKey: "used-3" },
          { ...jobBody(), idempotencyKey: "new-1" },
          { ...jobBody(), idempotencyKey: "new-1" },
        ],
      },
    });
    if (!res.ok) throw new Error("expected success");
    const results = res.body.results;
    expect(results.map((r) => r.status)).toEqual([200, 422, 201, 201, 200]);
    expect(results[0]!.job!.id).toBe(first.body.results[0]!.job!.id);
    expect(results[1]!.error!.type).toBe(problemType("idempotency-key-reused"));
    expect(results[2]!.job!.id).not.toBe(first.body.results[2]!.job!.id);
    expect(results[4]!.job!.id).toBe(results[3]!.job!.id);
    expect(await suite.h.prisma.job.count({ where: { tenantId: tenant.id } })).toBe(5);
  });

  it("does not count replays against the pending-job quota", async () => {
    const small = await suite.h.createTenant({ maxPendingJobs: 3 });
    const client = suite.h.client(small.apiKey);
    const first = await client.call("createJobsBatch", { body: { jobs: ["q-1", "q-2"].map((idempotencyKey) => ({ ...jobBody(), idempotencyKey })) } });
    if (!first.ok) throw new Error("expected success");
    const res = await client.call("createJobsBatch", {
      body: { jobs: ["q-1", "q-2", "q-3", "q-4"].map((idempotencyKey) => ({ ...jobBody(), idempotencyKey })) },
    });
    if (!res.ok) throw new Error("expected success");
    expect(res.body.results.map((r) => r.status)).toEqual([200, 200, 201, 429]);
    expect(res.body.results[3]!.error!.type).toBe(problemType("quota-exceeded"));
    expect(await suite.h.prisma.job.count({ where: { tenantId: small.id } })).toBe(3);
  });

  it("refuses more than 1,000 jobs", async () => {
    const res = await suite.h.client(suite.a.apiKey).call("createJobsBatch", { body: { jobs: Array.from({ length: 1001 }, () => jobBody()) } });
    expect(res.status).toBe(422);
  });
});

describe("reading jobs", () => {
  it("gets a job with its attempts, and pages through the list newest first", async () => {
    const tenant = await suite.h.createTenant();
    const client = suite.h.client(tenant.apiKey);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await client.call("createJob", { body: jobBody({ metadata: { i } }) });
      if (!res.ok) throw new Error("create failed");
      created.push(res.body.id);
    }
    const one = await client.call("getJob", { params: { id: created[0]! } });
    expect(one.status).toBe(200);
    if (!one.ok) throw new Error("expected success");
    expect(one.body.attempts).toEqual([]);

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await client.call("listJobs", { query: { limit: 2, ...(cursor ? { cursor } : {}) } });
      if (!page.ok) throw new Error("list failed");
      seen.push(...page.body.data.map((j) => j.id));
      if (!page.body.nextCursor) break;
      cursor = page.body.nextCursor;
    }
    expect(seen).toEqual([...created].reverse());

    const filtered = await client.call("listJobs", { query: { status: "cancelled" } });
    if (!filtered.ok) throw new Error("list failed");
    expect(filtered.body.data).toEqual([]);
    expect((await client.call("listJobs", { query: { status: "bogus" } })).status).toBe(422);
    expect((await client.call("listJobs", { query: { cursor: "garbage" } })).status).toBe(422);
  });

  it("finds a job by its idempotency key and lists the jobs of one dependency", async () => {
    const tenant = await suite.h.createTenant();
    const client = suite.h.client(tenant.apiKey);
    const keyed = await client.call("createJob", { body: jobBody(), idempotencyKey: "order-42" });
    const named = await client.call("createJob", { body: jobBody({ dependencyKey: "payments-api" }) });
    const plain = await client.call("createJob", { body: jobBody() });
    if (!keyed.ok || !named.ok || !plain.ok) throw new Error("create failed");
    const byKey = await client.call("listJobs", { query: { idempotencyKey: "order-42" } });
    if (!byKey.ok) throw new Error("list failed");
    expect(byKey.body.data.map((j) => j.id)).toEqual([keyed.body.id]);
    const byDependency = await client.call("listJobs", { query: { dependency: "payments-api" } });
    if (!byDependency.ok) throw new Error("list failed");
    expect(byDependency.body.data.map((j) => j.id)).toEqual([named.body.id]);
    // Another tenant's key never matches.
    const other = await suite.h.createTenant();
    const foreign = await suite.h.client(other.apiKey).call("listJobs", { query: { idempotencyKey: "order-42" } });
    expect(foreign.ok && foreign.body.data).toEqual([]);
  });

  it("never shows or cancels another tenant's job (404, same as a missing one)", async () => {
    const created = await suite.h.client(suite.a.apiKey).call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error("create failed");
    const asB = suite.h.client(b.apiKey);
    for (const res of [
      await asB.call("getJob", { params: { id: created.body.id } }),
      await asB.call("cancelJob", { params: { id: created.body.id } }),
      await asB.call("getJob", { params: { id: "00000000-0000-4000-8000-000000000000" } }),
      await asB.call("getJob", { params: { id: "not-a-uuid" } }),
    ]) {
      expect(res.status).toBe(404);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(problemType("not-found"));
    }
    const listB = await asB.call("listJobs", {});
    if (!listB.ok) throw new Error("list failed");
    expect(listB.body.data.map((j) => j.id)).not.toContain(created.body.id);
    expect((await suite.h.prisma.job.findUniqueOrThrow({ where: { id: created.body.id } })).status).toBe("scheduled");
  });
});

describe("POST /api/v1/jobs/{id}/cancel", () => {
  it("cancels a job that has not started (200), and it stays cancelled", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error("create failed");
    const res = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(res.status).toBe(200);
    if (!res.ok) throw new Error("expected success");
    expect(res.body).toMatchObject({ outcome: "cancelled", attemptsStarted: 0, repeated: false });
    // The job as GET shows it, its queue named (not an empty string).
    expect(res.body.job).toMatchObject({ status: "cancelled", version: 2, queue: "default" });
    // A repeat (a client that lost the first answer) is answered as one, changing nothing.
    const again = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(again.status).toBe(200);
    if (!again.ok) throw new Error("expected success");
    expect(again.body).toMatchObject({ outcome: "cancelled", attemptsStarted: 0, repeated: true, job: { status: "cancelled", version: 2, queue: "default" } });
    const audits = await suite.h.prisma.auditLog.findMany({ where: { tenantId: suite.a.id, action: "job.cancelled", targetId: created.body.id } });
    expect(audits.map((a) => a.actorId)).toEqual([suite.a.keyId]);
  });

  it("a job waiting for its retry is cancelled_after_attempts: the earlier attempt may have had its effect", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error("create failed");
    // What a failed first attempt leaves (the worker's retry decision): back to scheduled, one attempt made.
    await suite.h.prisma.$executeRaw`UPDATE jobs SET attempt_count = 1, version = 4, fencing_token = 1 WHERE id = ${created.body.id}::uuid`;
    const res = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(res.status).toBe(200);
    if (!res.ok) throw new Error("expected success");
    expect(res.body).toMatchObject({ outcome: "cancelled_after_attempts", attemptsStarted: 1, repeated: false, job: { status: "cancelled" } });
    const audit = await suite.h.prisma.auditLog.findFirst({ where: { tenantId: suite.a.id, action: "job.cancelled", targetId: created.body.id } });
    expect(audit?.details).toMatchObject({ attemptsStarted: 1 });
  });

  it("a job that finished otherwise is 409 with its status", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error("create failed");
    await suite.h.prisma.$executeRaw`UPDATE jobs SET status = 'succeeded', attempt_count = 1, finished_at = now() WHERE id = ${created.body.id}::uuid`;
    const res = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(res.status).toBe(409);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem).toMatchObject({ type: problemType("conflict"), jobStatus: "succeeded" });
  });

  it("cancels a dispatched job and discards its unstarted attempt", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error("create failed");
    const attemptId = crypto.randomUUID();
    // What the dispatcher does: dispatched + a pending attempt, version bumped.
    await suite.h.prisma.$executeRaw`UPDATE jobs SET status = 'dispatched', version = 2, fencing_token = 1, current_attempt_id = ${attemptId}::uuid WHERE id = ${created.body.id}::uuid`;
    await suite.h.prisma.$executeRaw`INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch) VALUES (${attemptId}::uuid, ${created.body.id}::uuid, ${suite.a.id}::uuid, 1, 1, 2, 1)`;
    const res = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(res.status).toBe(200);
    if (!res.ok) throw new Error("expected success");
    expect(res.body.job).toMatchObject({ status: "cancelled", version: 3 });
    expect((await suite.h.prisma.attempt.findUniqueOrThrow({ where: { id: attemptId } })).status).toBe("discarded");
  });

  it("tells the truth about a running job (202 running; version untouched)", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error("create failed");
    await suite.h.prisma.$executeRaw`UPDATE jobs SET status = 'running', version = 3 WHERE id = ${created.body.id}::uuid`;
    const res = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(res.status).toBe(202);
    if (!res.ok) throw new Error("expected success");
    expect(res.body).toMatchObject({ outcome: "running", repeated: false });
    expect(res.body.job.status).toBe("running");
    expect(res.body.job.queue).toBe("default");
    expect(res.body.job.version).toBe(3);
    expect(res.body.job.cancelRequestedAt).not.toBeNull();
    const again = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(again.status).toBe(202);
    if (!again.ok) throw new Error("expected success");
    expect(again.body).toMatchObject({ outcome: "running", repeated: true, job: { cancelRequestedAt: res.body.job.cancelRequestedAt } });
    expect(await suite.h.prisma.auditLog.count({ where: { tenantId: suite.a.id, action: "job.cancel_requested", targetId: created.body.id } })).toBe(1);
  });
});

describe("the OpenAPI document", () => {
  it("the validator catches a response that breaks the document", async () => {
    const bad = { route: "createJob" as const, method: "post", path: "/jobs", contentType: "application/json" };
    const validator = (await import("./openapi-validator")).createOpenApiValidator(suite.h.baseUrl);
    const found = await validator.violations([
      { ...bad, status: 201, body: { id: "not-a-job" } },
      { ...bad, status: 418, body: {} },
      { ...bad, status: 404, contentType: "application/problem+json", body: { type: "https://tick.dev/problems/made-up", title: "x", status: 404, detail: "x" } },
    ]);
    expect(found).toHaveLength(3);
    expect(found[1]).toMatch(/status not documented/);
  });
});

itConformsToOpenApi(suite, 40);
