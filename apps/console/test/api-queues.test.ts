import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();

describe("queues", () => {
  it("creates, reads, updates, pauses and resumes a queue, with an audit row for each change", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createQueue", { body: { name: "emails", concurrency: 10, ratePerSecond: 50 } });
    expect(created.status).toBe(201);
    if (!created.ok) throw new Error("expected success");
    expect(created.body).toMatchObject({ name: "emails", paused: false, concurrency: 10, ratePerSecond: 50, defaultMaxAttempts: 5, version: 1 });

    expect((await client.call("createQueue", { body: { name: "emails" } })).status).toBe(409);
    expect((await client.call("createQueue", { body: { name: "Bad Name" } })).status).toBe(422);

    const updated = await client.call("updateQueue", {
      params: { name: "emails" },
      body: { defaultMaxAttempts: 8, defaultBackoff: { strategy: "fixed", baseMs: 500, maxMs: 500, jitter: "none" } },
    });
    if (!updated.ok) throw new Error("expected success");
    expect(updated.body).toMatchObject({ defaultMaxAttempts: 8, version: 2, concurrency: 10 });
    expect((await client.call("updateQueue", { params: { name: "emails" }, body: {} })).status).toBe(422);

    const paused = await client.call("pauseQueue", { params: { name: "emails" } });
    if (!paused.ok) throw new Error("expected success");
    expect(paused.body.paused).toBe(true);
    const list = await client.call("listQueues", {});
    if (!list.ok) throw new Error("expected success");
    expect(list.body.data.map((q) => [q.name, q.paused])).toEqual([["default", false], ["emails", true]]);
    const resumed = await client.call("resumeQueue", { params: { name: "emails" } });
    if (!resumed.ok) throw new Error("expected success");
    expect(resumed.body).toMatchObject({ paused: false, version: 4 });

    const actions = (await suite.h.prisma.auditLog.findMany({ where: { tenantId: suite.a.id, targetType: "queue" }, orderBy: { id: "asc" } })).map((r) => r.action);
    expect(actions).toEqual(["queue.created", "queue.updated", "queue.paused", "queue.resumed"]);

    // Jobs of the new queue take its retry defaults.
    const job = await client.call("createJob", { body: { queue: "emails", target: { url: "https://93.184.216.34/x" } } });
    if (!job.ok) throw new Error("expected success");
    expect(job.body.maxAttempts).toBe(8);
    expect(job.body.backoff).toEqual({ strategy: "fixed", baseMs: 500, maxMs: 500, jitter: "none" });
  });

  it("another tenant's queue is invisible", async () => {
    const b = await suite.h.createTenant();
    await suite.h.client(suite.a.apiKey).call("createQueue", { body: { name: "private-a" } });
    expect((await suite.h.client(b.apiKey).call("getQueue", { params: { name: "private-a" } })).status).toBe(404);
    expect((await suite.h.client(b.apiKey).call("pauseQueue", { params: { name: "private-a" } })).status).toBe(404);
  });
});

itConformsToOpenApi(suite);
