import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

// Open sign-up mails a confirmation link: here into a directory the test reads.
const mailDir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-atomic-mail-"));
const suite = useConsole({ TICK_SIGNUP: "open", TICK_MAIL_DIR: mailDir });
afterAll(() => fs.rmSync(mailDir, { recursive: true, force: true }));

/** The sign-up token mailed to `to`, once its mail is written. */
async function mailedSignUpToken(to: string): Promise<string> {
  let token: string | undefined;
  await waitFor(
    () => {
      for (const f of fs.readdirSync(mailDir).filter((n) => n.endsWith(".json"))) {
        const mail = JSON.parse(fs.readFileSync(path.join(mailDir, f), "utf8")) as { to: string; text: string };
        if (mail.to === to) token = /#token=([\w-]+)/.exec(mail.text)?.[1];
      }
      return token !== undefined;
    },
    { timeoutMs: 10_000, description: `the sign-up mail to ${to}` },
  );
  return token!;
}

/**
 * Every audit insert fails while `fn` runs: a trigger in this test's own database raises on audit_log,
 * as a crash between a change and its audit row would leave it (the row never written).
 */
async function withAuditFailing<T>(fn: () => Promise<T>): Promise<T> {
  const { prisma } = suite.h;
  await prisma.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION tick_test_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'audit insert refused by the test'; END $$`);
  await prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION tick_test_refuse_audit()`);
  try {
    return await fn();
  } finally {
    await prisma.$executeRawUnsafe(`DROP TRIGGER refuse_audit ON audit_log`);
  }
}

describe("a change and its audit row commit together", () => {
  it("when the audit row cannot be written, every audited change answers 500 and changes nothing; once it can, each change and its row land together", async () => {
    const { prisma } = suite.h;
    const tenantId = suite.a.id;
    const client = suite.h.client(suite.a.apiKey);
    // What exists before: a queue, a key, a job, the first signing secret.
    expect((await client.call("createQueue", { body: { name: "before" } })).status).toBe(201);
    const key = await suite.h.addKey(tenantId, ["jobs:read"]);
    const job = await client.call("createJob", { body: jobBody() });
    if (!job.ok) throw new Error(JSON.stringify(job.problem));
    expect((await client.call("listSigningSecrets", {})).status).toBe(200);
    const snapshot = async () => ({
      queues: await prisma.queue.findMany({ where: { tenantId }, select: { name: true, paused: true }, orderBy: { name: "asc" } }),
      keys: await prisma.apiKey.findMany({ where: { tenantId }, select: { id: true, revokedAt: true }, orderBy: { id: "asc" } }),
      job: await prisma.job.findUnique({ where: { id: job.body.id }, select: { status: true, version: true } }),
      secrets: await prisma.signingSecret.count({ where: { tenantId } }),
      settings: await prisma.tenant.findUnique({ where: { id: tenantId }, select: { retentionDays: true } }),
      schedules: await prisma.schedule.count({ where: { tenantId } }),
      dependencyPauses: await prisma.dependencyPause.count({ where: { tenantId } }),
      audit: await prisma.auditLog.count({ where: { tenantId } }),
    });
    const before = await snapshot();

    const changes = [
      () => client.call("createQueue", { body: { name: "during" } }),
      () => client.call("pauseQueue", { params: { name: "before" } }),
      () => client.call("createApiKey", { body: { name: "during", scopes: ["jobs:read"] } }),
      () => client.call("revokeApiKey", { params: { id: key.keyId } }),
      () => client.call("cancelJob", { params: { id: job.body.id } }),
      () => client.call("rotateSigningSecret", { body: { overlapSeconds: 60 } }),
      () => client.call("updateSettings", { body: { retentionDays: 3 } }),
      () => client.call("createSchedule", { body: { name: "during", cron: "*/5 * * * *", timezone: "Europe/Berlin", job: { target: { url: "https://93.184.216.34/report" } } } }),
      () => client.call("pauseDependency", { params: { key: "api.example.com" }, body: {} }),
    ];
    await withAuditFailing(async () => {
      for (const change of changes) {
        const res = await change();
        expect(res.status).toBe(500);
        if (res.ok) throw new Error("expected a problem");
        expect(res.problem.type).toBe("https://tick.dev/problems/internal");
      }
    });
    expect(await snapshot()).toEqual(before);

    // With the audit log writable again, each change lands with its row.
    for (const change of changes) expect((await change()).status).toBeLessThan(300);
    const after = await snapshot();
    expect(after.queues).toContainEqual({ name: "before", paused: true });
    expect(after.queues).toContainEqual({ name: "during", paused: false });
    expect(after.keys.find((k) => k.id === key.keyId)?.revokedAt).not.toBeNull();
    expect(after.keys).toHaveLength(before.keys.length + 1);
    expect(after.job?.status).toBe("cancelled");
    expect(after.secrets).toBe(before.secrets + 1);
    expect(after.settings?.retentionDays).toBe(3);
    expect(after.schedules).toBe(1);
    expect(after.dependencyPauses).toBe(1);
    const actions = (await prisma.auditLog.findMany({ where: { tenantId }, orderBy: { id: "asc" }, select: { action: true } })).map((a) => a.action);
    expect(actions.slice(-changes.length)).toEqual([
      "queue.created",
      "queue.paused",
      "api_key.created",
      "api_key.revoked",
      "job.cancelled",
      "webhook_secret.rotated",
      "tenant.settings.updated",
      "schedule.created",
      "dependency.paused",
    ]);
  });

  it("the same holds for sign-up, members, invitations, webhooks and platform operators' changes", async () => {
    const { prisma } = suite.h;
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    const member = await suite.h.addUser(t.id, "viewer");
    const endpoint = await client.call("createWebhookEndpoint", { body: { url: "https://93.184.216.34/hook", events: ["job.dead"] } });
    if (!endpoint.ok) throw new Error("endpoint");
    const failed = await prisma.webhookDelivery.create({ data: { tenantId: t.id, jobId: crypto.randomUUID(), event: "job.dead", url: "https://93.184.216.34/hook", payload: {}, status: "failed" } });
    const invited = await client.call("inviteMember", { body: { email: `pending-${Date.now()}@example.test`, role: "viewer" } });
    if (!invited.ok) throw new Error("invite");
    const ops = await suite.h.addUser(t.id, "viewer");
    await prisma.user.update({ where: { id: ops.id }, data: { platformOperator: true } });
    const operator = suite.h.sessionClient(await suite.h.signIn(ops.email, ops.password));
    const email = `founder-${Date.now()}@example.test`;
    // Sign-up itself writes nothing audited (the confirmation does): ask first, confirm inside the changes.
    expect((await suite.h.client("").call("signUp", { body: { tenantName: "Atomic", email, password: "a long enough passphrase" } })).status).toBe(202);
    const token = await mailedSignUpToken(email);
    const snapshot = async () => ({
      tenants: await prisma.tenant.count(),
      users: await prisma.user.count(),
      tenant: await prisma.tenant.findUnique({ where: { id: t.id }, select: { suspendedAt: true, weight: true } }),
      memberships: await prisma.membership.findMany({ where: { tenantId: t.id }, select: { userId: true, role: true }, orderBy: { userId: "asc" } }),
      invitations: await prisma.invitation.findMany({ where: { tenantId: t.id }, select: { id: true, revokedAt: true }, orderBy: { id: "asc" } }),
      endpoints: await prisma.webhookEndpoint.findMany({ where: { tenantId: t.id }, select: { id: true, enabled: true }, orderBy: { id: "asc" } }),
      deliveries: await prisma.webhookDelivery.findMany({ where: { tenantId: t.id }, select: { id: true, status: true }, orderBy: { id: "asc" } }),
      audit: await prisma.auditLog.count({ where: { tenantId: t.id } }),
    });
    const before = await snapshot();
    const changes = [
      () => suite.h.client("").call("verifySignup", { body: { token } }),
      () => client.call("inviteMember", { body: { email: `new-${Date.now()}@example.test`, role: "viewer" } }),
      () => client.call("revokeInvitation", { params: { id: invited.body.invitation.id } }),
      () => client.call("updateMember", { params: { id: member.id }, body: { role: "operator" } }),
      () => client.call("createWebhookEndpoint", { body: { url: "https://93.184.216.34/other", events: ["job.succeeded"] } }),
      () => client.call("updateWebhookEndpoint", { params: { id: endpoint.body.id }, body: { enabled: false } }),
      () => client.call("testWebhookEndpoint", { params: { id: endpoint.body.id } }),
      () => client.call("redeliverWebhooks", { body: { ids: [failed.id] } }),
      () => client.call("removeMember", { params: { id: member.id } }),
      // Last: a suspended tenant's key is refused.
      () => operator.call("operatorUpdateTenant", { params: { id: t.id }, body: { weight: 7 } }),
      () => operator.call("operatorSuspendTenant", { params: { id: t.id }, body: { reason: "atomic" } }),
    ];
    await withAuditFailing(async () => {
      for (const change of changes) {
        const res = await change();
        expect(res.status).toBe(500);
      }
    });
    expect(await snapshot()).toEqual(before);
    expect(await prisma.user.findUnique({ where: { email } })).toBeNull();

    for (const change of changes) expect((await change()).status).toBeLessThan(300);
    const actions = (await prisma.auditLog.findMany({ where: { tenantId: t.id }, orderBy: { id: "asc" }, select: { action: true } })).map((a) => a.action);
    expect(actions.slice(-10)).toEqual([
      "member.invited",
      "invitation.revoked",
      "member.role_changed",
      "webhook_endpoint.created",
      "webhook_endpoint.updated",
      "webhook_endpoint.tested",
      "webhook_delivery.redelivered",
      "member.removed",
      "tenant.limits_changed",
      "tenant.suspended",
    ]);
    const signedUp = await prisma.user.findUniqueOrThrow({ where: { email }, include: { memberships: true } });
    expect(await prisma.auditLog.count({ where: { tenantId: signedUp.memberships[0]!.tenantId } })).toBe(3);
  });

  it("an export records its mark only with its audit row: with the row refused the stream ends without its last line and the mark stays", async () => {
    const { prisma } = suite.h;
    const tenant = await suite.h.createTenant();
    // Read the stream by hand: a cut stream is the expected outcome here, not a client error.
    const exportText = () =>
      fetch(`${suite.h.baseUrl}/api/v1/jobs/export`, { method: "POST", headers: { authorization: `Bearer ${tenant.apiKey}` } })
        .then((res) => res.text())
        .catch(() => "");
    const mark = async () => (await prisma.tenant.findUnique({ where: { id: tenant.id }, select: { exportedThrough: true } }))?.exportedThrough ?? null;
    const refused = await withAuditFailing(exportText);
    expect(refused).not.toContain('"type":"end"');
    expect(await mark()).toBeNull();
    expect(await prisma.auditLog.count({ where: { tenantId: tenant.id, action: "jobs.exported" } })).toBe(0);

    expect(await exportText()).toContain('"type":"end"');
    expect(await mark()).not.toBeNull();
    expect(await prisma.auditLog.count({ where: { tenantId: tenant.id, action: "jobs.exported" } })).toBe(1);
  });
});

itConformsToOpenApi(suite);
