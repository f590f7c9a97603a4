import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();

describe("audit log API", () => {
  it("lists the tenant's changes newest first, filters them, pages through them and needs audit:read", async () => {
    const client = suite.h.client(suite.a.apiKey);
    for (const name of ["q1", "q2", "q3"]) await client.call("createQueue", { body: { name } });
    await client.call("pauseQueue", { params: { name: "q2" } });

    const all = await client.call("listAuditLog", {});
    if (!all.ok) throw new Error(JSON.stringify(all.problem));
    expect(all.body.data.map((e) => e.action)).toEqual(["queue.paused", "queue.created", "queue.created", "queue.created"]);
    expect(all.body.data[0]).toMatchObject({ actorType: "api_key", actorId: suite.a.keyId, targetType: "queue" });

    const paused = await client.call("listAuditLog", { query: { action: "queue.paused" } });
    if (!paused.ok) throw new Error("filter failed");
    expect(paused.body.data).toHaveLength(1);

    const first = await client.call("listAuditLog", { query: { limit: 3 } });
    if (!first.ok || !first.body.nextCursor) throw new Error("expected a second page");
    const second = await client.call("listAuditLog", { query: { limit: 3, cursor: first.body.nextCursor } });
    if (!second.ok) throw new Error("second page failed");
    expect([...first.body.data, ...second.body.data].map((e) => e.id)).toEqual(all.body.data.map((e) => e.id));
    expect((await client.call("listAuditLog", { query: { cursor: "nope" } })).status).toBe(422);

    // Another tenant sees none of it; a key without audit:read gets 403.
    const b = await suite.h.createTenant();
    const other = await suite.h.client(b.apiKey).call("listAuditLog", {});
    if (!other.ok) throw new Error("list failed");
    expect(other.body.data).toEqual([]);
    const { apiKey } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    expect((await suite.h.client(apiKey).call("listAuditLog", {})).status).toBe(403);
  });

  it("names every actor as a person reads it (email, key name and prefix, operator), and filters by kind of actor", async () => {
    const t = await suite.h.createTenant();
    const key = await suite.h.prisma.apiKey.findUniqueOrThrow({ where: { id: t.keyId } });
    await suite.h.client(t.apiKey).call("createQueue", { body: { name: "by-key" } });
    const person = await suite.h.addUser(t.id, "admin");
    const session = suite.h.sessionClient(await suite.h.signIn(person.email, person.password), { "tick-tenant": t.id });
    await session.call("createQueue", { body: { name: "by-person" } });
    await suite.h.prisma.auditLog.create({ data: { tenantId: t.id, actorType: "operator", actorId: person.id, action: "tenant.limits_changed", targetType: "tenant", targetId: t.id, details: {} } });
    await suite.h.prisma.auditLog.create({ data: { tenantId: t.id, actorType: "system", actorId: null, action: "jobs.exported", details: {} } });

    const all = await suite.h.client(t.apiKey).call("listAuditLog", {});
    if (!all.ok) throw new Error("list failed");
    expect(all.body.data.map((e) => [e.action, e.actorName])).toEqual([
      ["jobs.exported", "system"],
      ["tenant.limits_changed", `${person.email} (platform operator)`],
      ["queue.created", person.email],
      ["queue.created", `API key ${key.name} (${key.prefix})`],
    ]);
    const byPeople = await suite.h.client(t.apiKey).call("listAuditLog", { query: { actorType: "user" } });
    expect(byPeople.ok && byPeople.body.data.map((e) => e.actorName)).toEqual([person.email]);
    expect((await suite.h.client(t.apiKey).call("listAuditLog", { query: { actorType: "bogus" } })).status).toBe(422);
  });
});

itConformsToOpenApi(suite);
