import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createBreakers } from "@tick/breaker";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();
let redis: Redis | undefined;
afterAll(() => redis?.disconnect());

/** Jobs of a tenant's default queue straight into the table: `dueInS` from the database's now. */
const insertJobs = (tenantId: string, dependencyKey: string | null, status: string, count: number, dueInS: number) =>
  suite.h.prisma.$executeRawUnsafe(
    `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, due_at, url, dependency_key, updated_at)
     SELECT gen_random_uuid(), t.id, q.id, t.shard, $3::job_status, now() + make_interval(secs => $5), 'https://93.184.216.34/x', $2, now()
       FROM tenants t JOIN queues q ON q.tenant_id = t.id AND q.name = 'default', generate_series(1, $4)
      WHERE t.id = $1::uuid`,
    tenantId,
    dependencyKey,
    status,
    count,
    dueInS,
  );

describe("dependencies (S11)", () => {
  it("lists the dependencies of the tenant's live jobs with their breaker state and counts, and its paused ones", async () => {
    const a = await suite.h.createTenant();
    const b = await suite.h.createTenant();
    await insertJobs(a.id, "api.example.com", "scheduled", 3, -30);
    await insertJobs(a.id, "api.example.com", "scheduled", 2, 3_600);
    await insertJobs(a.id, "api.example.com", "running", 1, -60);
    await insertJobs(a.id, "mail.example:8443", "dispatched", 2, -1);
    await insertJobs(a.id, "gone.example", "succeeded", 4, -600); // finished jobs only: not listed
    await insertJobs(a.id, null, "scheduled", 1, -1); // no dependency: not listed
    await insertJobs(b.id, "b-only.example", "scheduled", 5, -1);
    await insertJobs(b.id, "api.example.com", "scheduled", 1, -1); // same dependency, b's own breaker

    // a's breaker for api.example.com opens (as workers would record it), through @tick/breaker itself.
    redis = new Redis(suite.h.redis.url);
    const breakers = createBreakers({ redis, prefix: suite.h.redis.prefix, policy: { minRequests: 2, openMs: 600_000 } });
    const before = Date.now();
    for (let i = 0; i < 2; i++) await breakers.record({ tenantId: a.id, dependency: "api.example.com" }, false);

    const client = suite.h.client(a.apiKey);
    const list = await client.call("listDependencies", {});
    if (!list.ok) throw new Error(`expected success, got ${list.status}`);
    const shown = list.body.data.map((d) => ({ ...d, breaker: d.breaker && { ...d.breaker, openUntil: d.breaker.openUntil === null ? null : "<instant>" } }));
    expect(shown).toEqual([
      { key: "api.example.com", paused: false, pausedAt: null, reason: null, breaker: { state: "open", openUntil: "<instant>" }, due: 3, inFlight: 1 },
      { key: "mail.example:8443", paused: false, pausedAt: null, reason: null, breaker: { state: "closed", openUntil: null }, due: 0, inFlight: 2 },
    ]);
    const openUntil = Date.parse(list.body.data[0]!.breaker!.openUntil!);
    expect(openUntil).toBeGreaterThan(before + 590_000);
    expect(openUntil).toBeLessThan(Date.now() + 610_000);

    // b sees only its own, and a's failures did not open b's breaker for the same dependency.
    const listB = await suite.h.client(b.apiKey).call("listDependencies", {});
    if (!listB.ok) throw new Error("expected success");
    expect(listB.body.data.map((d) => [d.key, d.due, d.breaker?.state])).toEqual([["api.example.com", 1, "closed"], ["b-only.example", 5, "closed"]]);
  });

  it("pauses and resumes one dependency by its URL-encoded key: idempotent, allowed with no jobs yet, audited once per change, invisible to other tenants", async () => {
    const a = await suite.h.createTenant();
    const b = await suite.h.createTenant();
    await insertJobs(a.id, "payments/v2 eu", "scheduled", 2, -10);
    const client = suite.h.client(a.apiKey);

    const paused = await client.call("pauseDependency", { params: { key: "payments/v2 eu" }, body: { reason: "their outage, INC-42" } });
    if (!paused.ok) throw new Error(`expected success, got ${paused.status} ${JSON.stringify(paused.problem)}`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ key: "payments/v2 eu", paused: true, reason: "their outage, INC-42", due: 2, inFlight: 0, breaker: { state: "closed", openUntil: null } });
    const pausedAt = paused.body.pausedAt;
    expect(Date.parse(pausedAt!)).toBeGreaterThan(Date.now() - 60_000);

    // Again: nothing changes (the first pause stays), no second audit row.
    const repeated = await client.call("pauseDependency", { params: { key: "payments/v2 eu" }, body: {} });
    if (!repeated.ok) throw new Error("expected success");
    expect(repeated.body).toMatchObject({ paused: true, pausedAt, reason: "their outage, INC-42" });

    // A dependency with no jobs yet may be paused, and is listed.
    const ahead = await client.call("pauseDependency", { params: { key: "new.example" }, body: {} });
    if (!ahead.ok) throw new Error("expected success");
    expect(ahead.body).toMatchObject({ key: "new.example", paused: true, due: 0, inFlight: 0 });
    const list = await client.call("listDependencies", {});
    if (!list.ok) throw new Error("expected success");
    expect(list.body.data.map((d) => [d.key, d.paused])).toEqual([
      ["new.example", true],
      ["payments/v2 eu", true],
    ]);
    const row = await suite.h.prisma.dependencyPause.findUniqueOrThrow({ where: { tenantId_dependencyKey: { tenantId: a.id, dependencyKey: "payments/v2 eu" } } });
    expect(row).toMatchObject({ pausedByType: "api_key", pausedById: a.keyId, reason: "their outage, INC-42" });

    // Another tenant neither sees nor touches a's pause; its own resume of the same key changes nothing of a's.
    const clientB = suite.h.client(b.apiKey);
    const listB = await clientB.call("listDependencies", {});
    if (!listB.ok) throw new Error("expected success");
    expect(listB.body.data).toEqual([]);
    const resumedByB = await clientB.call("resumeDependency", { params: { key: "payments/v2 eu" } });
    if (!resumedByB.ok) throw new Error("expected success");
    expect(resumedByB.body).toMatchObject({ key: "payments/v2 eu", paused: false, due: 0 });
    expect(await suite.h.prisma.dependencyPause.count({ where: { tenantId: a.id } })).toBe(2);

    const resumed = await client.call("resumeDependency", { params: { key: "payments/v2 eu" } });
    if (!resumed.ok) throw new Error("expected success");
    expect(resumed.body).toMatchObject({ key: "payments/v2 eu", paused: false, pausedAt: null, reason: null, due: 2 });
    const resumedAgain = await client.call("resumeDependency", { params: { key: "payments/v2 eu" } });
    expect(resumedAgain.status).toBe(200);
    // Resumed with no live job: answered as a dependency with nothing in it, not 404.
    const resumedEmpty = await client.call("resumeDependency", { params: { key: "new.example" } });
    if (!resumedEmpty.ok) throw new Error("expected success");
    expect(resumedEmpty.body).toMatchObject({ key: "new.example", paused: false, due: 0, inFlight: 0 });

    const audit = await suite.h.prisma.auditLog.findMany({ where: { tenantId: a.id, targetType: "dependency" }, orderBy: { id: "asc" } });
    expect(audit.map((r) => [r.action, r.targetId, r.actorType])).toEqual([
      ["dependency.paused", "payments/v2 eu", "api_key"],
      ["dependency.paused", "new.example", "api_key"],
      ["dependency.resumed", "payments/v2 eu", "api_key"],
      ["dependency.resumed", "new.example", "api_key"],
    ]);
    expect(audit[0]!.details).toEqual({ reason: "their outage, INC-42" });
    expect(await suite.h.prisma.auditLog.count({ where: { tenantId: b.id, targetType: "dependency" } })).toBe(0);
  });

  it("needs queues:write to pause and queues:read to list; a reason over 500 characters is refused", async () => {
    const a = await suite.h.createTenant();
    const reader = await suite.h.addKey(a.id, ["queues:read"]);
    const readOnly = suite.h.client(reader.apiKey);
    expect((await readOnly.call("listDependencies", {})).status).toBe(200);
    const refused = await readOnly.call("pauseDependency", { params: { key: "x.example" }, body: {} });
    expect(refused.status).toBe(403);
    const jobsOnly = await suite.h.addKey(a.id, ["jobs:read"]);
    expect((await suite.h.client(jobsOnly.apiKey).call("listDependencies", {})).status).toBe(403);
    const tooLong = await suite.h.client(a.apiKey).call("pauseDependency", { params: { key: "x.example" }, body: { reason: "x".repeat(501) } });
    expect(tooLong.status).toBe(422);
    expect(await suite.h.prisma.dependencyPause.count({ where: { tenantId: a.id } })).toBe(0);
  });

  it("with Redis unreachable the list still answers, the breaker unknown (null)", async () => {
    const a = await suite.h.createTenant();
    await insertJobs(a.id, "api.example.com", "scheduled", 1, -1);
    suite.h.redisProxy.cut();
    try {
      const list = await suite.h.client(a.apiKey).call("listDependencies", {});
      if (!list.ok) throw new Error(`expected success, got ${list.status}`);
      expect(list.body.data).toEqual([{ key: "api.example.com", paused: false, pausedAt: null, reason: null, breaker: null, due: 1, inFlight: 0 }]);
    } finally {
      suite.h.redisProxy.restore();
    }
  });
});

itConformsToOpenApi(suite);
