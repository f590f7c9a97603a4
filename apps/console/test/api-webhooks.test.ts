import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();

const problem = (code: string) => `https://tick.dev/problems/${code.replaceAll("_", "-")}`;
const publicUrl = "https://93.184.216.34/hooks/tick";

describe("webhook endpoints", () => {
  it("creates, reads, changes and deletes an endpoint, each change audited; the log outlives the endpoint", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createWebhookEndpoint", { body: { url: publicUrl, events: ["job.succeeded", "job.dead"], description: "billing" } });
    expect(created.status).toBe(201);
    if (!created.ok) throw new Error("create failed");
    expect(created.body).toMatchObject({ url: publicUrl, events: ["job.succeeded", "job.dead"], enabled: true, description: "billing", last24h: { delivered: 0, pending: 0, failed: 0 } });
    const id = created.body.id;
    expect(JSON.stringify(created.body)).not.toMatch(/secret/i);

    const changed = await client.call("updateWebhookEndpoint", { params: { id }, body: { enabled: false, events: ["job.dead"], description: null } });
    expect(changed.ok && changed.body).toMatchObject({ enabled: false, events: ["job.dead"], description: null, url: publicUrl });
    const listed = await client.call("listWebhookEndpoints", {});
    expect(listed.ok && listed.body.data.map((e) => e.id)).toContain(id);

    const test = await client.call("testWebhookEndpoint", { params: { id } });
    expect(test.status).toBe(202);
    const deleted = await client.call("deleteWebhookEndpoint", { params: { id } });
    expect(deleted.status).toBe(200);
    expect((await client.call("getWebhookEndpoint", { params: { id } })).status).toBe(404);
    const log = await client.call("listWebhookDeliveries", {});
    expect(log.ok && log.body.data.some((d) => test.ok && d.id === test.body.id)).toBe(true);
    const actions = (await suite.h.prisma.auditLog.findMany({ where: { tenantId: suite.a.id, targetId: id }, orderBy: { id: "asc" } })).map((a) => a.action);
    expect(actions).toEqual(["webhook_endpoint.created", "webhook_endpoint.updated", "webhook_endpoint.tested", "webhook_endpoint.deleted"]);
  });

  it.each([
    ["a loopback address", "http://127.0.0.1:9/hook"],
    ["a private address", "http://10.1.2.3/hook"],
    ["link-local metadata", "http://169.254.169.254/latest/meta-data"],
    ["a non-http scheme", "ftp://93.184.216.34/x"],
  ])("refuses %s with 422 target-not-allowed, at create and at change", async (_name, url) => {
    const client = suite.h.client(suite.a.apiKey);
    const res = await client.call("createWebhookEndpoint", { body: { url, events: ["job.dead"] } });
    expect(res.status).toBe(422);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe(problem("target_not_allowed"));
    const ok = await client.call("createWebhookEndpoint", { body: { url: publicUrl, events: ["job.dead"] } });
    if (!ok.ok) throw new Error("create failed");
    expect((await client.call("updateWebhookEndpoint", { params: { id: ok.body.id }, body: { url } })).status).toBe(422);
  });

  it("bad input is 422 naming the field; another tenant's endpoint is 404; scopes are enforced", async () => {
    const client = suite.h.client(suite.a.apiKey);
    for (const body of [{ url: publicUrl, events: [] }, { url: publicUrl, events: ["job.exploded"] }, { url: publicUrl, events: ["job.dead"], secret: "x" }]) {
      const res = await client.call("createWebhookEndpoint", { body });
      expect(res.status).toBe(422);
    }
    const mine = await client.call("createWebhookEndpoint", { body: { url: publicUrl, events: ["job.dead"] } });
    if (!mine.ok) throw new Error("create failed");
    const other = suite.h.client((await suite.h.createTenant()).apiKey);
    for (const res of [
      await other.call("getWebhookEndpoint", { params: { id: mine.body.id } }),
      await other.call("updateWebhookEndpoint", { params: { id: mine.body.id }, body: { enabled: false } }),
      await other.call("deleteWebhookEndpoint", { params: { id: mine.body.id } }),
      await other.call("testWebhookEndpoint", { params: { id: mine.body.id } }),
    ]) expect(res.status).toBe(404);
    const reader = suite.h.client((await suite.h.addKey(suite.a.id, ["webhooks:read"])).apiKey);
    expect((await reader.call("listWebhookEndpoints", {})).status).toBe(200);
    expect((await reader.call("listWebhookDeliveries", {})).status).toBe(200);
    expect((await reader.call("createWebhookEndpoint", { body: { url: publicUrl, events: ["job.dead"] } })).status).toBe(403);
    expect((await reader.call("redeliverWebhooks", { body: { ids: [mine.body.id] } })).status).toBe(403);
    const viewer = await suite.h.addUser(suite.a.id, "viewer");
    const viewerSession = suite.h.sessionClient(await suite.h.signIn(viewer.email, viewer.password), { "tick-tenant": suite.a.id });
    expect((await viewerSession.call("listWebhookEndpoints", {})).status).toBe(200);
    expect((await viewerSession.call("testWebhookEndpoint", { params: { id: mine.body.id } })).status).toBe(403);
  });
});

describe("the delivery log and redelivery", () => {
  it("a test delivery is queued with its outbox row; the log filters by endpoint, status and job and pages", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    const e = await client.call("createWebhookEndpoint", { body: { url: publicUrl, events: ["job.succeeded"] } });
    if (!e.ok) throw new Error("create failed");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await client.call("testWebhookEndpoint", { params: { id: e.body.id } });
      if (!res.ok) throw new Error("test failed");
      expect(res.body).toMatchObject({ event: "webhook.test", status: "pending", tries: 0, jobId: null, endpointId: e.body.id, url: publicUrl });
      ids.push(res.body.id);
    }
    const outbox = await suite.h.prisma.outbox.findMany({ where: { tenantId: t.id, kind: "webhook" } });
    expect(outbox.map((o) => (o.payload as { deliveryId: string }).deliveryId).sort()).toEqual([...ids].sort());

    // A job's own deliveries, as the completion writes them.
    const jobId = crypto.randomUUID();
    await suite.h.prisma.webhookDelivery.create({ data: { tenantId: t.id, jobId, event: "job.dead", url: "https://93.184.216.34/cb", payload: {}, status: "failed", attempts: 10, lastStatus: 500, lastError: "HTTP 500", lastDurationMs: 42 } });

    const first = await client.call("listWebhookDeliveries", { query: { limit: 2 } });
    if (!first.ok || !first.body.nextCursor) throw new Error("expected two pages");
    const second = await client.call("listWebhookDeliveries", { query: { limit: 2, cursor: first.body.nextCursor } });
    if (!second.ok) throw new Error("second page failed");
    expect([...first.body.data, ...second.body.data]).toHaveLength(4);
    const byJob = await client.call("listWebhookDeliveries", { query: { jobId } });
    expect(byJob.ok && byJob.body.data.map((d) => [d.event, d.status, d.tries, d.lastStatus, d.lastDurationMs, d.nextAttemptAt])).toEqual([["job.dead", "failed", 10, 500, 42, null]]);
    const byEndpoint = await client.call("listWebhookDeliveries", { query: { endpointId: e.body.id, status: "pending" } });
    expect(byEndpoint.ok && byEndpoint.body.data.map((d) => d.id).sort()).toEqual([...ids].sort());
    expect((await client.call("listWebhookDeliveries", { query: { status: "lost" } })).status).toBe(422);
    // Another tenant's log is empty of all of it.
    const other = await suite.h.client(suite.a.apiKey).call("listWebhookDeliveries", { query: { jobId } });
    expect(other.ok && other.body.data).toEqual([]);
  });

  it("redelivers failed deliveries (one more try, a new outbox row with the next try number), one result per id", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    const mk = (status: "failed" | "pending" | "delivered") =>
      suite.h.prisma.webhookDelivery.create({ data: { tenantId: t.id, jobId: crypto.randomUUID(), event: "job.dead", url: "https://93.184.216.34/cb", payload: {}, status, attempts: 10 } });
    const failed = await mk("failed");
    const failed2 = await mk("failed");
    const pending = await mk("pending");
    const foreign = await suite.h.prisma.webhookDelivery.create({ data: { tenantId: suite.a.id, jobId: crypto.randomUUID(), event: "job.dead", url: "https://93.184.216.34/cb", payload: {}, status: "failed" } });
    const unknown = crypto.randomUUID();
    const res = await client.call("redeliverWebhooks", { body: { ids: [failed.id, pending.id, foreign.id, unknown, failed2.id] } });
    if (!res.ok) throw new Error(`redeliver failed: ${res.status}`);
    expect(res.body.results).toEqual([
      { id: failed.id, result: "queued" },
      { id: pending.id, result: "not_failed" },
      { id: foreign.id, result: "not_found" },
      { id: unknown, result: "not_found" },
      { id: failed2.id, result: "queued" },
    ]);
    expect((await suite.h.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: failed.id } })).status).toBe("pending");
    expect((await suite.h.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: foreign.id } })).status).toBe("failed");
    const rows = await suite.h.prisma.outbox.findMany({ where: { tenantId: t.id, kind: "webhook" } });
    expect(rows.map((o) => o.payload).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
      [{ deliveryId: failed.id, try: 11 }, { deliveryId: failed2.id, try: 11 }].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    );
    const audit = await suite.h.prisma.auditLog.findFirstOrThrow({ where: { tenantId: t.id, action: "webhook_delivery.redelivered" } });
    expect(audit.details).toMatchObject({ count: 2 });
    expect((await client.call("redeliverWebhooks", { body: { ids: [] } })).status).toBe(422);
  });
});

itConformsToOpenApi(suite, 20);
