import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole({ TICK_SIGNUP: "invite" });

const problem = (code: string) => `https://tick.dev/problems/${code.replaceAll("_", "-")}`;
const tokenOf = (acceptUrl: string) => new URL(acceptUrl).hash.replace(/^#token=/, "");
let n = 0;
const newEmail = (role: string) => `${role}-${Date.now().toString(36)}-${++n}@example.test`;
const password = "a long enough passphrase";

/** An owner of tenant `a` signed in to the console, with a client calling as them. */
async function ownerSession() {
  const owner = await suite.h.addUser(suite.a.id, "owner");
  return { owner, client: suite.h.sessionClient(await suite.h.signIn(owner.email, owner.password)) };
}

async function invite(client: ReturnType<typeof suite.h.client>, role: string, email = newEmail(role)) {
  const res = await client.call("inviteMember", { body: { email, role } });
  if (!res.ok) throw new Error(`invite failed: ${res.status} ${res.problem.detail}`);
  return { ...res.body, email, token: tokenOf(res.body.acceptUrl) };
}

describe("invitations", () => {
  it("an owner invites by email; the link holds a single-use token stored only hashed; the invitee joins with the role", async () => {
    const { owner, client } = await ownerSession();
    const inv = await invite(client, "viewer");
    expect(inv.acceptUrl).toMatch(/\/invite#token=/);
    expect(inv.emailed).toBe(false); // no SMTP_URL here
    expect(inv.invitation).toMatchObject({ email: inv.email, role: "viewer", state: "pending", invitedBy: owner.email });
    const row = await suite.h.prisma.invitation.findUniqueOrThrow({ where: { id: inv.invitation.id } });
    expect(row.tokenHash).toBe(createHash("sha256").update(inv.token).digest("hex"));
    expect(JSON.stringify(row)).not.toContain(inv.token);

    const anonymous = suite.h.client("");
    const preview = await anonymous.call("previewInvitation", { body: { token: inv.token } });
    expect(preview.ok && preview.body).toMatchObject({ email: inv.email, role: "viewer", accountExists: false, tenant: { id: suite.a.id } });
    const accepted = await anonymous.call("acceptInvitation", { body: { token: inv.token, password, name: "Vic" } });
    expect(accepted.status).toBe(200);
    const again = await anonymous.call("acceptInvitation", { body: { token: inv.token, password } });
    expect(again.status).toBe(404); // single use
    const member = await suite.h.prisma.membership.findFirstOrThrow({ where: { tenantId: suite.a.id, user: { email: inv.email } } });
    expect(member.role).toBe("viewer");
    const actions = (await suite.h.prisma.auditLog.findMany({ where: { tenantId: suite.a.id, action: { in: ["member.invited", "member.joined"] } } })).map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(["member.invited", "member.joined"]));

    // The viewer reads but cannot create keys, replay, change settings or invite (403 from the API).
    const viewer = suite.h.sessionClient(await suite.h.signIn(inv.email, password), { "tick-tenant": suite.a.id });
    expect((await viewer.call("listMembers", {})).status).toBe(200);
    expect((await viewer.call("listJobs", {})).status).toBe(200);
    for (const res of [
      await viewer.call("createApiKey", { body: { name: "x", scopes: ["jobs:read"] } }),
      await viewer.call("createDlqReplay", { body: { filter: {}, ratePerSecond: 1, dryRun: true } }),
      await viewer.call("updateSettings", { body: { retentionDays: 3 } }),
      await viewer.call("inviteMember", { body: { email: newEmail("x"), role: "viewer" } }),
    ]) {
      expect(res.status).toBe(403);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(problem("forbidden"));
    }
  });

  it("an existing account joins only with its own password, and lands in the new tenant", async () => {
    const other = await suite.h.createTenant();
    const someone = await suite.h.addUser(other.id, "admin");
    const { client } = await ownerSession();
    const inv = await invite(client, "operator", someone.email);
    const anonymous = suite.h.client("");
    const preview = await anonymous.call("previewInvitation", { body: { token: inv.token } });
    expect(preview.ok && preview.body.accountExists).toBe(true);
    const wrong = await anonymous.call("acceptInvitation", { body: { token: inv.token, password: "not the right password" } });
    expect(wrong.status).toBe(409);
    const right = await anonymous.call("acceptInvitation", { body: { token: inv.token, password: someone.password } });
    expect(right.status).toBe(200);
    const user = await suite.h.prisma.user.findUniqueOrThrow({ where: { email: someone.email }, include: { memberships: true } });
    expect(user.memberships.map((m) => m.tenantId).sort()).toEqual([other.id, suite.a.id].sort());
    expect(user.currentTenantId).toBe(suite.a.id);
  });

  it("a revoked or expired link is a 404 like an unknown one", async () => {
    const { client } = await ownerSession();
    const revoked = await invite(client, "viewer");
    const r = await client.call("revokeInvitation", { params: { id: revoked.invitation.id } });
    expect(r.ok && r.body.state).toBe("revoked");
    const expired = await invite(client, "viewer");
    await suite.h.prisma.invitation.update({ where: { id: expired.invitation.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const anonymous = suite.h.client("");
    for (const token of [revoked.token, expired.token, "x".repeat(43)]) {
      const res = await anonymous.call("acceptInvitation", { body: { token, password } });
      expect(res.status).toBe(404);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(problem("not_found"));
    }
  });

  it("bad input is a 422 naming the field", async () => {
    const { client } = await ownerSession();
    for (const body of [{ email: "not-an-email", role: "viewer" }, { email: newEmail("v"), role: "superuser" }]) {
      const res = await client.call("inviteMember", { body });
      expect(res.status).toBe(422);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(problem("validation_failed"));
    }
    const short = await suite.h.client("").call("acceptInvitation", { body: { token: "x".repeat(43), password: "short" } });
    expect(short.status).toBe(422);
  });

  it("inviting an existing member is a 409", async () => {
    const { owner, client } = await ownerSession();
    const res = await client.call("inviteMember", { body: { email: owner.email, role: "viewer" } });
    expect(res.status).toBe(409);
  });
});

describe("roles and owners", () => {
  it("an admin cannot make, change or remove an owner; an owner can", async () => {
    const { owner, client: ownerClient } = await ownerSession();
    const admin = await suite.h.addUser(suite.a.id, "admin");
    const adminClient = suite.h.sessionClient(await suite.h.signIn(admin.email, admin.password), { "tick-tenant": suite.a.id });
    const target = await suite.h.addUser(suite.a.id, "viewer");
    expect((await adminClient.call("inviteMember", { body: { email: newEmail("o"), role: "owner" } })).status).toBe(403);
    expect((await adminClient.call("updateMember", { params: { id: target.id }, body: { role: "owner" } })).status).toBe(403);
    expect((await adminClient.call("updateMember", { params: { id: owner.id }, body: { role: "viewer" } })).status).toBe(403);
    expect((await adminClient.call("removeMember", { params: { id: owner.id } })).status).toBe(403);
    expect((await adminClient.call("updateMember", { params: { id: admin.id }, body: { role: "owner" } })).status).toBe(403); // not even themselves
    const promoted = await adminClient.call("updateMember", { params: { id: target.id }, body: { role: "operator" } });
    expect(promoted.ok && promoted.body.role).toBe("operator");
    const made = await ownerClient.call("updateMember", { params: { id: target.id }, body: { role: "owner" } });
    expect(made.ok && made.body.role).toBe("owner");
    const audit = await suite.h.prisma.auditLog.findMany({ where: { tenantId: suite.a.id, action: "member.role_changed", targetId: target.id }, orderBy: { id: "asc" } });
    expect(audit.map((a) => (a.details as { to: string }).to)).toEqual(["operator", "owner"]);
  });

  it("the last owner can be neither demoted nor removed, nor leave (409)", async () => {
    const lone = await suite.h.createTenant();
    const owner = await suite.h.addUser(lone.id, "owner");
    const client = suite.h.sessionClient(await suite.h.signIn(owner.email, owner.password), { "tick-tenant": lone.id });
    for (const res of [
      await client.call("updateMember", { params: { id: owner.id }, body: { role: "admin" } }),
      await client.call("removeMember", { params: { id: owner.id } }),
    ]) {
      expect(res.status).toBe(409);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.detail).toMatch(/last owner/);
    }
    // With a second owner, the first may leave.
    const second = await suite.h.addUser(lone.id, "owner");
    expect((await client.call("removeMember", { params: { id: owner.id } })).status).toBe(200);
    expect(await suite.h.prisma.membership.count({ where: { tenantId: lone.id, role: "owner" } })).toBe(1);
    expect((await suite.h.prisma.membership.findFirstOrThrow({ where: { tenantId: lone.id } })).userId).toBe(second.id);
  });

  it("a removed member's session stops working for the tenant on its next request; a viewer may leave", async () => {
    const { client } = await ownerSession();
    const member = await suite.h.addUser(suite.a.id, "operator");
    const session = suite.h.sessionClient(await suite.h.signIn(member.email, member.password), { "tick-tenant": suite.a.id });
    expect((await session.call("listJobs", {})).status).toBe(200);
    expect((await client.call("removeMember", { params: { id: member.id } })).status).toBe(200);
    const after = await session.call("listJobs", {});
    expect(after.status).toBe(403);
    const viewer = await suite.h.addUser(suite.a.id, "viewer");
    const viewerSession = suite.h.sessionClient(await suite.h.signIn(viewer.email, viewer.password), { "tick-tenant": suite.a.id });
    const colleague = await suite.h.addUser(suite.a.id, "viewer");
    expect((await viewerSession.call("removeMember", { params: { id: colleague.id } })).status).toBe(403); // others: members:write
    expect((await viewerSession.call("removeMember", { params: { id: viewer.id } })).status).toBe(200);
    expect((await suite.h.prisma.auditLog.findFirstOrThrow({ where: { tenantId: suite.a.id, targetId: viewer.id } })).action).toBe("member.left");
  });

  it("another tenant's members and invitations are 404 to this tenant's key", async () => {
    const { client } = await ownerSession();
    const inv = await invite(client, "viewer");
    const other = await suite.h.createTenant();
    const otherKey = suite.h.client(other.apiKey);
    const aMember = await suite.h.addUser(suite.a.id, "viewer");
    expect((await otherKey.call("revokeInvitation", { params: { id: inv.invitation.id } })).status).toBe(404);
    expect((await otherKey.call("updateMember", { params: { id: aMember.id }, body: { role: "admin" } })).status).toBe(404);
    expect((await otherKey.call("removeMember", { params: { id: aMember.id } })).status).toBe(404);
    const list = await otherKey.call("listMembers", {});
    expect(list.ok && list.body.invitations).toEqual([]);
  });

  it("a key without members:write cannot invite (403)", async () => {
    const { apiKey } = await suite.h.addKey(suite.a.id, ["members:read"]);
    const res = await suite.h.client(apiKey).call("inviteMember", { body: { email: newEmail("k"), role: "viewer" } });
    expect(res.status).toBe(403);
  });
});

itConformsToOpenApi(suite, 20);
