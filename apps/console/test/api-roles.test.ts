import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

// Roles are a property of the principal: a person's membership role, or an API key's role (its maker's).
// Scopes pick the operations a credential may call; the role caps them and decides owner-only actions.
const suite = useConsole();

const insufficientRole = "https://tick.dev/problems/insufficient-role";
const forbidden = "https://tick.dev/problems/forbidden";

async function problemType(res: { ok: boolean; status: number; problem?: { type: string } }) {
  if (res.ok) throw new Error(`expected a problem, got ${res.status}`);
  return res.problem!.type;
}

describe("an API key never does what its maker could not", () => {
  it("a key an admin made cannot make, change or remove an owner, invite one, or mint an owner key (403 insufficient-role)", async () => {
    const { h, a } = suite;
    const owner = await h.addUser(a.id, "owner");
    const admin = await h.addUser(a.id, "admin");
    const adminSession = h.sessionClient(await h.signIn(admin.email, admin.password), { "tick-tenant": a.id });

    // The admin mints an admin-scoped key: allowed (admins hold every scope), but the key acts as an admin.
    const minted = await adminSession.call("createApiKey", { body: { name: "k", scopes: ["admin"] } });
    expect(minted.status).toBe(201);
    if (!minted.ok) throw new Error("expected a key");
    expect(minted.body.apiKey.role).toBe("admin");
    const adminKey = h.client(minted.body.key);

    const attempts = [
      await adminKey.call("updateMember", { params: { id: admin.id }, body: { role: "owner" } }),
      await adminKey.call("updateMember", { params: { id: owner.id }, body: { role: "viewer" } }),
      await adminKey.call("removeMember", { params: { id: owner.id } }),
      await adminKey.call("inviteMember", { body: { email: `o-${Date.now()}@example.test`, role: "owner" } }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(403);
      expect(await problemType(res)).toBe(insufficientRole);
    }
    // A key that key makes is no more than an admin either, and still cannot.
    const grandchild = await adminKey.call("createApiKey", { body: { name: "k2", scopes: ["admin"] } });
    if (!grandchild.ok) throw new Error("expected a key");
    expect(grandchild.body.apiKey.role).toBe("admin");
    const again = await h.client(grandchild.body.key).call("updateMember", { params: { id: admin.id }, body: { role: "owner" } });
    expect(await problemType(again)).toBe(insufficientRole);

    const stillOwner = await h.prisma.membership.findUniqueOrThrow({ where: { userId_tenantId: { userId: owner.id, tenantId: a.id } } });
    expect(stillOwner.role).toBe("owner");
    const adminNow = await h.prisma.membership.findUniqueOrThrow({ where: { userId_tenantId: { userId: admin.id, tenantId: a.id } } });
    expect(adminNow.role).toBe("admin");
    expect(await h.prisma.invitation.count({ where: { tenantId: a.id, role: "owner" } })).toBe(0);

    // What an admin may do, the admin's key still does: change a non-owner's role.
    const operator = await h.addUser(a.id, "operator");
    expect((await adminKey.call("updateMember", { params: { id: operator.id }, body: { role: "viewer" } })).status).toBe(200);
  });

  it("a key an owner made acts as an owner, until its maker is demoted or leaves", async () => {
    const { h } = suite;
    const t = await h.createTenant();
    const owner = await h.addUser(t.id, "owner");
    const second = await h.addUser(t.id, "owner");
    const target = await h.addUser(t.id, "viewer");
    const ownerSession = h.sessionClient(await h.signIn(owner.email, owner.password), { "tick-tenant": t.id });
    const minted = await ownerSession.call("createApiKey", { body: { name: "owner key", scopes: ["members:write", "members:read"] } });
    if (!minted.ok) throw new Error("expected a key");
    expect(minted.body.apiKey.role).toBe("owner");
    const ownerKey = h.client(minted.body.key);
    expect((await ownerKey.call("updateMember", { params: { id: target.id }, body: { role: "owner" } })).status).toBe(200);
    expect((await ownerKey.call("updateMember", { params: { id: target.id }, body: { role: "viewer" } })).status).toBe(200);

    // Another owner demotes the key's maker to admin: the key is lowered with them, at once.
    const secondSession = h.sessionClient(await h.signIn(second.email, second.password), { "tick-tenant": t.id });
    expect((await secondSession.call("updateMember", { params: { id: owner.id }, body: { role: "admin" } })).status).toBe(200);
    expect((await h.prisma.apiKey.findUniqueOrThrow({ where: { id: minted.body.apiKey.id } })).role).toBe("admin");
    const refused = await ownerKey.call("updateMember", { params: { id: target.id }, body: { role: "owner" } });
    expect(await problemType(refused)).toBe(insufficientRole);
    const audit = await h.prisma.auditLog.findFirstOrThrow({ where: { tenantId: t.id, action: "member.role_changed", targetId: owner.id } });
    expect(audit.details).toMatchObject({ from: "owner", to: "admin", keysLowered: 1 });

    // Demoted further to viewer, the key keeps only what a viewer may do, whatever its scopes say.
    expect((await secondSession.call("updateMember", { params: { id: owner.id }, body: { role: "viewer" } })).status).toBe(200);
    expect((await ownerKey.call("listMembers", {})).status).toBe(200);
    expect(await problemType(await ownerKey.call("updateMember", { params: { id: target.id }, body: { role: "operator" } }))).toBe(forbidden);
  });

  it("an admin-scoped key whose role is viewer reads but cannot write", async () => {
    const { h, a } = suite;
    const { apiKey } = await h.addKey(a.id, ["admin"], "viewer");
    const client = h.client(apiKey);
    expect((await client.call("listJobs", {})).status).toBe(200);
    const res = await client.call("createQueue", { body: { name: "nope" } });
    expect(res.status).toBe(403);
    expect(await problemType(res)).toBe(forbidden);
    expect(await h.prisma.queue.count({ where: { tenantId: a.id, name: "nope" } })).toBe(0);
  });
});

describe("cookie writes come from the console's own origin, scheme included", () => {
  it("refuses a wrong scheme, a wrong port, `null`, a malformed and a missing Origin with 403; accepts the console's", async () => {
    const { h, a } = suite;
    const admin = await h.addUser(a.id, "admin");
    const cookie = await h.signIn(admin.email, admin.password);
    const base = new URL(h.baseUrl);
    const write = (origin: string | null) =>
      fetch(`${h.baseUrl}/api/v1/queues`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json", "tick-tenant": a.id, ...(origin === null ? {} : { origin }) },
        body: JSON.stringify({ name: `q-${Math.random().toString(36).slice(2, 8)}` }),
      });
    for (const origin of [
      `https://${base.host}`,
      `http://${base.hostname}:${Number(base.port) + 1}`,
      `http://localhost:${base.port}`,
      "null",
      "http://[",
      "not a url",
      `${h.baseUrl}/path`,
      null,
    ]) {
      const res = await write(origin);
      expect(res.status, `Origin ${origin}`).toBe(403);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { type: string }).type).toBe(forbidden);
    }
    expect(await h.prisma.queue.count({ where: { tenantId: a.id, name: { startsWith: "q-" } } })).toBe(0);
    expect((await write(h.baseUrl)).status).toBe(201);
  });
});

itConformsToOpenApi(suite);
