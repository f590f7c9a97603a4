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

describe("queue figures in the list", () => {
  /** Inserts jobs of a tenant's queue straight into the table: `dueInS` from the database's now, in a given status. */
  const insertJobs = (tenantId: string, queue: string, status: string, count: number, dueInS: number, dependencyKey: string | null = null) =>
    suite.h.prisma.$executeRawUnsafe(
      `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, dependency_key, updated_at)
       SELECT gen_random_uuid(), t.id, q.id, t.shard, $3::job_status, now() + make_interval(secs => $5), 'https://93.184.216.34/x', $6, now()
         FROM tenants t JOIN queues q ON q.tenant_id = t.id AND q.name = $2, generate_series(1, $4)
        WHERE t.id = $1::uuid`,
      tenantId,
      queue,
      status,
      count,
      dueInS,
      dependencyKey,
    );

  it("each queue has its live figures: due now, scheduled, in flight and the oldest due job's age, by the database clock; another tenant's jobs count only for it", async () => {
    const a = await suite.h.createTenant();
    const b = await suite.h.createTenant();
    const clientA = suite.h.client(a.apiKey);
    const clientB = suite.h.client(b.apiKey);
    for (const client of [clientA, clientB]) expect((await client.call("createQueue", { body: { name: "mail", ratePerSecond: 5 } })).status).toBe(201);
    await insertJobs(a.id, "mail", "scheduled", 1, -60);
    await insertJobs(a.id, "mail", "scheduled", 2, -5);
    await insertJobs(a.id, "mail", "scheduled", 4, 3_600);
    await insertJobs(a.id, "mail", "dispatched", 2, -70);
    await insertJobs(a.id, "mail", "running", 1, -80);
    await insertJobs(a.id, "mail", "succeeded", 3, -90); // finished: not live, not counted
    await insertJobs(a.id, "mail", "dead", 1, -600);
    await insertJobs(a.id, "default", "scheduled", 1, 60);
    await insertJobs(b.id, "mail", "scheduled", 9, -7_200); // b's own queue of the same name
    await insertJobs(b.id, "default", "running", 2, -1);

    const listA = await clientA.call("listQueues", {});
    if (!listA.ok) throw new Error("expected success");
    const [defaultA, mailA] = listA.body.data;
    expect(defaultA).toMatchObject({ name: "default", stats: { due: 0, scheduled: 1, inFlight: 0, oldestDueAgeMs: null } });
    expect(mailA).toMatchObject({ name: "mail", ratePerSecond: 5, stats: { due: 3, scheduled: 7, inFlight: 3 } });
    // The oldest due job fell due 60 s ago by the database clock (give the request a few seconds).
    expect(mailA!.stats.oldestDueAgeMs).toBeGreaterThanOrEqual(60_000);
    expect(mailA!.stats.oldestDueAgeMs).toBeLessThan(70_000);

    const listB = await clientB.call("listQueues", {});
    if (!listB.ok) throw new Error("expected success");
    expect(listB.body.data.map((q) => [q.name, q.stats.due, q.stats.scheduled, q.stats.inFlight])).toEqual([
      ["default", 0, 0, 2],
      ["mail", 9, 9, 0],
    ]);
    expect(listB.body.data[1]!.stats.oldestDueAgeMs).toBeGreaterThanOrEqual(7_200_000);

    // A job row of b's cannot point at a's queue: the database refuses it (its key is the queue of its tenant), so
    // no figure of a's queue can include another tenant's job.
    await expect(
      suite.h.prisma.$executeRawUnsafe(
        `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, updated_at)
         SELECT gen_random_uuid(), $1::uuid, q.id, 0, 'scheduled', now() - interval '1 hour', 'https://93.184.216.34/x', now()
           FROM queues q WHERE q.tenant_id = $2::uuid AND q.name = 'mail'`,
        b.id,
        a.id,
      ),
    ).rejects.toThrow(/jobs_tenant_id_queue_id_fkey/);
    const again = await clientA.call("listQueues", {});
    if (!again.ok) throw new Error("expected success");
    expect(again.body.data[1]!.stats).toMatchObject({ due: 3, scheduled: 7, inFlight: 3 });
    expect(again.body.data[1]!.stats.oldestDueAgeMs).toBeLessThan(70_000);
  });
});

itConformsToOpenApi(suite);
