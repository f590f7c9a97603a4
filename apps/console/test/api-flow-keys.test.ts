// Flow keys through the API: the job's flowKey, a queue's per-key limits, the key routes (isolation, scopes,
// bad input), debounce on create, and the waiting reason on GET /jobs/{id}.
import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

const suite = useConsole();

function ok<T extends { ok: boolean; status: number }>(r: T): T & { ok: true } {
  if (!r.ok) throw new Error(`expected success, got ${r.status}: ${JSON.stringify((r as unknown as { problem: unknown }).problem)}`);
  return r as T & { ok: true };
}

/** Marks `count` of the tenant's jobs of a key as running, as a claim and a start would (the trigger counts them). */
const runJobs = (tenantId: string, key: string, count: number) =>
  suite.h.prisma.$executeRawUnsafe(
    `UPDATE jobs SET status = 'running', due_at = now() - interval '1 second'
      WHERE id IN (SELECT id FROM jobs WHERE tenant_id = $1::uuid AND flow_key = $2 AND status = 'scheduled' ORDER BY created_at LIMIT $3)`,
    tenantId,
    key,
    count,
  );

describe("flow keys on jobs and queues", () => {
  it("a job keeps its flowKey; a queue takes and shows its per-key limits", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const job = ok(await client.call("createJob", { body: jobBody({ flowKey: "customer 42/eu" }) }));
    expect(job.body.flowKey).toBe("customer 42/eu");
    const read = ok(await client.call("getJob", { params: { id: job.body.id } }));
    expect(read.body.flowKey).toBe("customer 42/eu");
    expect(read.body.waiting).toMatchObject({ code: "not_due" });

    const q = ok(await client.call("createQueue", { body: { name: "per-customer", perKeyConcurrency: 2, perKeyRate: { limit: 10, periodMs: 1000 } } }));
    expect(q.body).toMatchObject({ perKeyConcurrency: 2, perKeyRate: { limit: 10, periodMs: 1000 } });
    const changed = ok(await client.call("updateQueue", { params: { name: "per-customer" }, body: { perKeyRate: null } }));
    expect(changed.body).toMatchObject({ perKeyConcurrency: 2, perKeyRate: null });

    const bad = await client.call("updateQueue", { params: { name: "per-customer" }, body: { perKeyRate: { limit: 0, periodMs: 1000 } } });
    expect(bad.status).toBe(422);
    const tooLong = await client.call("createJob", { body: jobBody({ flowKey: "x".repeat(256) }) });
    expect(tooLong.status).toBe(422);
    expect((tooLong as unknown as { problem: { type: string } }).problem.type).toBe("https://tick.dev/problems/validation-failed");
  });

  it("lists jobs by flow key (with a queue too), and never another tenant's; an empty or too long key is a problem", async () => {
    const a = suite.h.client((await suite.h.createTenant()).apiKey);
    const b = suite.h.client((await suite.h.createTenant()).apiKey);
    const made: Record<string, string[]> = { k1: [], k2: [] };
    for (const key of ["k1", "k2", "k1"]) made[key]!.push(ok(await a.call("createJob", { body: jobBody({ flowKey: key }) })).body.id);
    ok(await a.call("createJob", { body: jobBody({}) }));
    ok(await b.call("createJob", { body: jobBody({ flowKey: "k1" }) }));
    const k1 = ok(await a.call("listJobs", { query: { flowKey: "k1" } }));
    expect(k1.body.data.map((j) => j.id).sort()).toEqual([...made.k1!].sort());
    expect(k1.body.data.every((j) => j.flowKey === "k1")).toBe(true);
    const inQueue = ok(await a.call("listJobs", { query: { flowKey: "k2", queue: "default" } }));
    expect(inQueue.body.data.map((j) => j.id)).toEqual(made.k2);
    expect(ok(await a.call("listJobs", { query: { flowKey: "k2", queue: "elsewhere" } })).body.data).toEqual([]);
    expect(ok(await b.call("listJobs", { query: { flowKey: "k2" } })).body.data).toEqual([]);
    expect((await a.call("listJobs", { query: { flowKey: "x".repeat(256) } })).status).toBe(422);
  });

  it("lists a queue's top keys with their figures; overrides, pauses and resets one; another tenant sees none of it", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    ok(await client.call("updateQueue", { params: { name: "default" }, body: { perKeyConcurrency: 2 } }));
    const due = { delayMs: 0 };
    for (let i = 0; i < 5; i++) ok(await client.call("createJob", { body: jobBody({ ...due, flowKey: "big" }) }));
    ok(await client.call("createJob", { body: jobBody({ ...due, flowKey: "small" }) }));
    await runJobs(t.id, "big", 2);

    const list = ok(await client.call("listFlowKeys", { params: { name: "default" }, query: {} }));
    expect(list.body.totals).toEqual({ keysWithWork: 2, keysAtCap: 1, keysPaused: 0 });
    expect(list.body.data.map((k) => [k.key, k.due, k.inFlight, k.concurrency])).toEqual([
      ["big", 3, 2, 2],
      ["small", 1, 0, 2],
    ]);
    const byFlight = ok(await client.call("listFlowKeys", { params: { name: "default" }, query: { sort: "in_flight", limit: 1 } }));
    expect(byFlight.body.data.map((k) => k.key)).toEqual(["big"]);

    const premium = ok(await client.call("putFlowKey", { params: { name: "default", key: "big" }, body: { concurrency: 10, weight: 5 } }));
    expect(premium.body).toMatchObject({ key: "big", concurrency: 10, weight: 5, paused: false, override: { concurrency: 10, weight: 5, rate: null, paused: false } });
    const paused = ok(await client.call("putFlowKey", { params: { name: "default", key: "small" }, body: { paused: true } }));
    expect(paused.body).toMatchObject({ paused: true, concurrency: 2 });
    const onlyPaused = ok(await client.call("listFlowKeys", { params: { name: "default" }, query: { paused: "true" } }));
    expect(onlyPaused.body.data.map((k) => k.key)).toEqual(["small"]);
    // Setting one field keeps the others.
    const rated = ok(await client.call("putFlowKey", { params: { name: "default", key: "big" }, body: { rate: { limit: 3, periodMs: 60_000 } } }));
    expect(rated.body).toMatchObject({ concurrency: 10, weight: 5, rate: { limit: 3, periodMs: 60_000 } });
    const reset = ok(await client.call("deleteFlowKey", { params: { name: "default", key: "big" } }));
    expect(reset.body).toMatchObject({ key: "big", concurrency: 2, weight: 1, rate: null, override: null, inFlight: 2 });
    // A key nobody named reads as zeros under the queue's limits.
    const unknown = ok(await client.call("getFlowKey", { params: { name: "default", key: "never-seen" } }));
    expect(unknown.body).toMatchObject({ key: "never-seen", due: 0, inFlight: 0, concurrency: 2, override: null });

    const audit = await suite.h.prisma.auditLog.findMany({ where: { tenantId: t.id, targetType: "flow_key" }, orderBy: { createdAt: "asc" } });
    expect(audit.map((a) => a.action)).toEqual(["flow_key.overridden", "flow_key.paused", "flow_key.overridden", "flow_key.reset"]);

    // Tenant a has a queue named default too: none of t's keys show there, and t's overrides did not touch it.
    const other = suite.h.client(suite.a.apiKey);
    const aList = ok(await other.call("listFlowKeys", { params: { name: "default" }, query: {} }));
    expect(aList.body.data.map((k) => k.key)).not.toContain("big");
    expect(ok(await other.call("getFlowKey", { params: { name: "default", key: "small" } })).body.paused).toBe(false);
    expect((await other.call("listFlowKeys", { params: { name: "nope" }, query: {} })).status).toBe(404);
  });

  it("the key routes take the queues scopes and refuse bad input with a problem", async () => {
    const t = await suite.h.createTenant();
    const reader = suite.h.client((await suite.h.addKey(t.id, ["queues:read"])).apiKey);
    ok(await reader.call("listFlowKeys", { params: { name: "default" }, query: {} }));
    const refused = await reader.call("putFlowKey", { params: { name: "default", key: "k" }, body: { paused: true } });
    expect(refused.status).toBe(403);
    const jobsOnly = suite.h.client((await suite.h.addKey(t.id, ["jobs:read"])).apiKey);
    expect((await jobsOnly.call("listFlowKeys", { params: { name: "default" }, query: {} })).status).toBe(403);

    const writer = suite.h.client(t.apiKey);
    for (const body of [{}, { concurrency: -1 }, { weight: 0 }, { rate: { limit: 1 } }, { paused: "yes" }, { extra: 1 }]) {
      const r = await writer.call("putFlowKey", { params: { name: "default", key: "k" }, body: body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect((r as unknown as { problem: { type: string } }).problem.type).toBe("https://tick.dev/problems/validation-failed");
    }
    const badSort = await writer.call("listFlowKeys", { params: { name: "default" }, query: { sort: "random" } });
    expect(badSort.status).toBe(422);
    // A key no job can carry names nothing: the same 404 as any malformed path parameter.
    const longKey = await writer.call("getFlowKey", { params: { name: "default", key: "k".repeat(256) } });
    expect(longKey.status).toBe(404);
  });
});

describe("debounce", () => {
  it("trailing: creates in the window fold into one job with the latest target, due periodMs after the last; an idempotent retry gives the same answer", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    const create = (n: number, key?: string) =>
      client.call("createJob", {
        body: { target: { url: "https://93.184.216.34/sync", body: `{"n":${n}}` }, debounce: { key: "sync:acct-1", periodMs: 30_000 } },
        ...(key ? { idempotencyKey: key } : {}),
      });
    const first = ok(await create(1));
    expect(first.status).toBe(201);
    expect(first.body.debouncedInto).toBeUndefined();
    expect(first.body.debounceKey).toBe("sync:acct-1");
    const firstDue = Date.parse(first.body.dueAt);
    await new Promise((r) => setTimeout(r, 50));
    const second = ok(await create(2, "retry-me"));
    expect(second.status).toBe(200);
    expect(second.body.debouncedInto).toBe(first.body.id);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.target.body).toBe('{"n":2}');
    expect(Date.parse(second.body.dueAt)).toBeGreaterThan(firstDue);
    const again = await create(2, "retry-me");
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, debouncedInto: first.body.id });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const third = ok(await create(3));
    expect(third.body.debouncedInto).toBe(first.body.id);
    const jobs = await suite.h.prisma.job.findMany({ where: { tenantId: t.id } });
    expect(jobs.map((j) => j.body)).toEqual(['{"n":3}']);

    // A job already dispatched is never changed: the next create opens a new window on a new job.
    await suite.h.prisma.$executeRawUnsafe(`UPDATE jobs SET status = 'dispatched' WHERE id = $1::uuid`, first.body.id);
    const fresh = ok(await create(4));
    expect(fresh.status).toBe(201);
    expect(fresh.body.id).not.toBe(first.body.id);
    expect((await suite.h.prisma.job.findUniqueOrThrow({ where: { id: first.body.id } })).body).toBe('{"n":3}');

    // Nor is a job waiting for its retry (scheduled again after an attempt): it was dispatched once.
    await suite.h.prisma.$executeRawUnsafe(`UPDATE jobs SET status = 'scheduled', attempt_count = 1, fencing_token = 1 WHERE id = $1::uuid`, fresh.body.id);
    const afterRetry = ok(await create(5));
    expect(afterRetry.status).toBe(201);
    expect(afterRetry.body.id).not.toBe(fresh.body.id);
    expect((await suite.h.prisma.job.findUniqueOrThrow({ where: { id: fresh.body.id } })).body).toBe('{"n":4}');

    // Nor a job claimed and put back before its call was made (a held dependency, a lost broker message): no
    // attempt counted, but it was dispatched.
    await suite.h.prisma.$executeRawUnsafe(`UPDATE jobs SET status = 'scheduled', attempt_count = 0, fencing_token = 1 WHERE id = $1::uuid`, afterRetry.body.id);
    const afterRequeue = ok(await create(6));
    expect(afterRequeue.status).toBe(201);
    expect(afterRequeue.body.id).not.toBe(afterRetry.body.id);
    expect((await suite.h.prisma.job.findUniqueOrThrow({ where: { id: afterRetry.body.id } })).body).toBe('{"n":5}');
  });

  it("trailing with maxWaitMs never moves the job past the window's first create + maxWaitMs", async () => {
    const client = suite.h.client((await suite.h.createTenant()).apiKey);
    const body = { target: { url: "https://93.184.216.34/sync" }, debounce: { key: "k", periodMs: 60_000, maxWaitMs: 61_000 } };
    const first = ok(await client.call("createJob", { body }));
    await new Promise((r) => setTimeout(r, 1_200));
    const later = ok(await client.call("createJob", { body }));
    expect(later.body.debouncedInto).toBe(first.body.id);
    const cap = Date.parse(first.body.createdAt) + 61_000;
    expect(Date.parse(later.body.dueAt)).toBeLessThanOrEqual(cap + 5);
    expect(Date.parse(later.body.dueAt)).toBeGreaterThan(Date.parse(first.body.dueAt));
  });

  it("leading: the first create's job runs at once and later creates in the window return it unchanged", async () => {
    const client = suite.h.client((await suite.h.createTenant()).apiKey);
    const create = (n: number) => client.call("createJob", { body: { target: { url: "https://93.184.216.34/x", body: String(n) }, debounce: { key: "k", periodMs: 60_000, mode: "leading" } } });
    const first = ok(await create(1));
    expect(first.status).toBe(201);
    expect(Date.parse(first.body.dueAt)).toBeLessThanOrEqual(Date.now() + 1_000);
    const second = ok(await create(2));
    expect(second.body).toMatchObject({ id: first.body.id, debouncedInto: first.body.id });
    expect(second.body.target.body).toBe("1");
  });

  it("refuses debounce with runAt or delayMs, and a bad window, as problems", async () => {
    const client = suite.h.client(suite.a.apiKey);
    for (const extra of [{ delayMs: 10 }, { runAt: new Date(Date.now() + 60_000).toISOString() }]) {
      const r = await client.call("createJob", { body: { target: { url: "https://93.184.216.34/x" }, debounce: { key: "k", periodMs: 1000 }, ...extra } });
      expect(r.status).toBe(422);
    }
    for (const debounce of [{ key: "", periodMs: 1000 }, { key: "k", periodMs: 0 }, { key: "k", periodMs: 5000, maxWaitMs: 10 }, { key: "k", periodMs: 1000, mode: "both" }]) {
      const r = await client.call("createJob", { body: { target: { url: "https://93.184.216.34/x" }, debounce } });
      expect(r.status, JSON.stringify(debounce)).toBe(422);
    }
  });

  it("a batch folds its own items that share a debounce key", async () => {
    const client = suite.h.client((await suite.h.createTenant()).apiKey);
    const item = (n: number) => ({ target: { url: "https://93.184.216.34/x", body: String(n) }, debounce: { key: "same", periodMs: 10_000 } });
    const r = ok(await client.call("createJobsBatch", { body: { jobs: [item(1), item(2), item(3)] } }));
    const [a, b, c] = r.body.results;
    expect(a!.status).toBe(201);
    expect(b).toMatchObject({ status: 200, debouncedInto: a!.job!.id });
    expect(c).toMatchObject({ status: 200, debouncedInto: a!.job!.id });
    expect(c!.job!.target.body).toBe("3");

    // Leading items of one batch: the first creates, the rest are answered with it; a retried item gets its answer again.
    const lead = (n: number) => ({ target: { url: "https://93.184.216.34/x", body: String(n) }, debounce: { key: "lead", periodMs: 60_000, mode: "leading" } });
    const first = ok(await client.call("createJobsBatch", { body: { jobs: [lead(1), { ...lead(2), idempotencyKey: "lead-2" }] } }));
    expect(first.body.results.map((x) => x.status)).toEqual([201, 200]);
    expect(first.body.results[1]!.debouncedInto).toBe(first.body.results[0]!.job!.id);
    expect(first.body.results[1]!.job!.target.body).toBe("1");
    const retried = ok(await client.call("createJobsBatch", { body: { jobs: [{ ...lead(2), idempotencyKey: "lead-2" }] } }));
    expect(retried.body.results[0]).toMatchObject({ status: 200, replayed: true, debouncedInto: first.body.results[0]!.job!.id });
  });
});

describe("why is this job waiting?", () => {
  it("says the key is at its cap with 2 of 2 in flight and names those jobs, then that its queue is paused", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    ok(await client.call("updateQueue", { params: { name: "default" }, body: { perKeyConcurrency: 2 } }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(ok(await client.call("createJob", { body: jobBody({ delayMs: 0, flowKey: "acme" }) })).body.id);
    await runJobs(t.id, "acme", 2);
    const third = ok(await client.call("getJob", { params: { id: ids[2]! } }));
    expect(third.body.waiting).toMatchObject({ code: "key_at_cap", inFlight: 2, cap: 2 });
    expect(third.body.waiting!.message).toContain("2 of 2 in flight");
    expect([...third.body.waiting!.inFlightJobIds!].sort()).toEqual([ids[0], ids[1]].sort());
    const running = ok(await client.call("getJob", { params: { id: ids[0]! } }));
    expect(running.body.waiting).toBeNull();

    ok(await client.call("putFlowKey", { params: { name: "default", key: "acme" }, body: { paused: true } }));
    expect(ok(await client.call("getJob", { params: { id: ids[2]! } })).body.waiting).toMatchObject({ code: "key_paused" });
    ok(await client.call("pauseQueue", { params: { name: "default" } }));
    expect(ok(await client.call("getJob", { params: { id: ids[2]! } })).body.waiting).toMatchObject({ code: "queue_paused" });
  });

  it("a key over its rate says when the next token comes", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    ok(await client.call("updateQueue", { params: { name: "default" }, body: { perKeyRate: { limit: 2, periodMs: 60_000 } } }));
    const job = ok(await client.call("createJob", { body: jobBody({ delayMs: 0, flowKey: "k" }) }));
    const queueId = (await suite.h.prisma.queue.findFirstOrThrow({ where: { tenantId: t.id, name: "default" } })).id;
    await suite.h.prisma.$executeRawUnsafe(`INSERT INTO flow_key_buckets (queue_id, key, tokens, tokens_at) VALUES ($1::uuid, 'k', 0, now())`, queueId);
    const w = ok(await client.call("getJob", { params: { id: job.body.id } })).body.waiting!;
    expect(w.code).toBe("key_over_rate");
    const next = Date.parse(w.nextTokenAt!) - Date.now();
    expect(next).toBeGreaterThan(25_000);
    expect(next).toBeLessThan(31_000);
  });
});

itConformsToOpenApi(suite, 20);
