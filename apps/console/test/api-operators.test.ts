import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

// One operator by config; others are made with the flag `npm run tick -- operator add` sets.
const suite = useConsole({ TICK_OPERATOR_EMAILS: "ops-by-config@example.test" });

const problem = (code: string) => `https://tick.dev/problems/${code.replaceAll("_", "-")}`;

async function operatorSession(byConfig = false) {
  const home = await suite.h.createTenant();
  const user = await suite.h.addUser(home.id, "viewer");
  if (byConfig) await suite.h.prisma.user.update({ where: { id: user.id }, data: { email: "ops-by-config@example.test" } });
  else await suite.h.prisma.user.update({ where: { id: user.id }, data: { platformOperator: true } });
  const email = byConfig ? "ops-by-config@example.test" : user.email;
  return { user, client: suite.h.sessionClient(await suite.h.signIn(email, user.password)) };
}

describe("platform operators", () => {
  it("only a platform operator's session may use the operator API: not a tenant owner, not an admin key, not anonymous", async () => {
    const owner = await suite.h.addUser(suite.a.id, "owner");
    const ownerSession = suite.h.sessionClient(await suite.h.signIn(owner.email, owner.password));
    const asOwner = await ownerSession.call("operatorListTenants", {});
    expect(asOwner.status).toBe(403);
    const asKey = await suite.h.client(suite.a.apiKey).call("operatorListTenants", {});
    expect(asKey.status).toBe(403);
    if (asKey.ok) throw new Error("expected a problem");
    expect(asKey.problem.detail).toMatch(/not an API key/);
    expect((await suite.h.client("").call("operatorListTenants", {})).status).toBe(401);
    const page = await fetch(`${suite.h.baseUrl}/operator`, { headers: { cookie: await suite.h.signIn(owner.email, owner.password) } });
    expect(await page.text()).toContain("This page is for the platform");
  });

  it("lists tenants with limits, members and pending jobs, searchable and a page at a time", async () => {
    const { client } = await operatorSession(true); // TICK_OPERATOR_EMAILS
    const extra = await Promise.all([1, 2, 3].map(() => suite.h.createTenant()));
    const all: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await client.call("operatorListTenants", { query: { limit: 2, ...(cursor ? { cursor } : {}) } });
      if (!res.ok) throw new Error(`list failed: ${res.status}`);
      all.push(...res.body.data.map((t) => t.slug));
      if (!res.body.nextCursor) break;
      cursor = res.body.nextCursor;
    }
    expect(all).toEqual([...all].sort());
    expect(new Set(all).size).toBe(all.length);
    for (const t of [suite.a, ...extra]) expect(all).toContain(t.slug);
    const found = await client.call("operatorListTenants", { query: { search: extra[0]!.slug.slice(2) } });
    expect(found.ok && found.body.data.map((t) => t.slug)).toEqual([extra[0]!.slug]);
    expect(found.ok && found.body.data[0]).toMatchObject({ weight: 1, maxInFlight: 100, members: 0, pendingJobs: 0, suspendedAt: null });
  });

  it("sets a tenant's limits, audited in its log; bad values are 422 and an unknown tenant 404", async () => {
    const { user, client } = await operatorSession();
    const t = await suite.h.createTenant();
    const res = await client.call("operatorUpdateTenant", { params: { id: t.id }, body: { weight: 5, maxInFlight: 40, admissionRate: 12.5 } });
    expect(res.ok && res.body).toMatchObject({ weight: 5, maxInFlight: 40, admissionRate: 12.5 });
    const stored = await suite.h.prisma.tenant.findUniqueOrThrow({ where: { id: t.id } });
    expect([stored.weight, stored.maxInFlight, stored.admissionRate]).toEqual([5, 40, 12.5]);
    const audit = await suite.h.prisma.auditLog.findFirstOrThrow({ where: { tenantId: t.id, action: "tenant.limits_changed" } });
    expect(audit.actorType).toBe("operator");
    expect(audit.actorId).toBe(user.id);
    expect(audit.details).toMatchObject({ changes: { weight: { from: 1, to: 5 } } });
    for (const body of [{ weight: 0 }, { maxInFlight: -1 }, {}, { shard: 3 }]) {
      const bad = await client.call("operatorUpdateTenant", { params: { id: t.id }, body });
      expect(bad.status).toBe(422);
      if (bad.ok) throw new Error("expected a problem");
      expect(bad.problem.type).toBe(problem("validation_failed"));
    }
    expect((await client.call("operatorUpdateTenant", { params: { id: crypto.randomUUID() }, body: { weight: 2 } })).status).toBe(404);
  });

  it("suspends a tenant: its key and its members' sessions get 403 tenant-suspended, nothing is deleted; resumed, they work again", async () => {
    const { client } = await operatorSession();
    const t = await suite.h.createTenant();
    const member = await suite.h.addUser(t.id, "owner");
    const memberSession = suite.h.sessionClient(await suite.h.signIn(member.email, member.password), { "tick-tenant": t.id });
    const key = suite.h.client(t.apiKey);
    const created = await key.call("createJob", { body: { target: { method: "POST", url: "https://93.184.216.34/x" }, delayMs: 3_600_000 } });
    expect(created.status).toBe(201);

    const suspended = await client.call("operatorSuspendTenant", { params: { id: t.id }, body: { reason: "unpaid invoice" } });
    expect(suspended.ok && suspended.body.suspendedAt).not.toBeNull();
    for (const res of [await key.call("listJobs", {}), await memberSession.call("listJobs", {})]) {
      expect(res.status).toBe(403);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(problem("tenant_suspended"));
    }
    expect(await suite.h.prisma.job.count({ where: { tenantId: t.id, status: "scheduled" } })).toBe(1);
    const page = await fetch(`${suite.h.baseUrl}/`, { headers: { cookie: await suite.h.signIn(member.email, member.password) } });
    expect(await page.text()).toContain("is suspended by the platform");
    // Suspending twice records once; the reason is in the audit.
    expect((await client.call("operatorSuspendTenant", { params: { id: t.id }, body: { reason: "again" } })).status).toBe(200);

    const resumed = await client.call("operatorResumeTenant", { params: { id: t.id } });
    expect(resumed.ok && resumed.body.suspendedAt).toBeNull();
    expect((await key.call("listJobs", {})).status).toBe(200);
    const actions = await suite.h.prisma.auditLog.findMany({ where: { tenantId: t.id, action: { in: ["tenant.suspended", "tenant.resumed"] } }, orderBy: { id: "asc" } });
    expect(actions.map((a) => [a.action, (a.details as { reason?: string }).reason ?? null])).toEqual([
      ["tenant.suspended", "unpaid invoice"],
      ["tenant.resumed", null],
    ]);
  });

  it("a suspend needs a reason (422)", async () => {
    const { client } = await operatorSession();
    const res = await client.call("operatorSuspendTenant", { params: { id: suite.a.id }, body: { reason: "" } });
    expect(res.status).toBe(422);
  });
});

itConformsToOpenApi(suite, 15);
