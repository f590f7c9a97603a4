import { randomBytes } from "node:crypto";
import type pg from "pg";
import { AppError, type Cidr } from "@tick/core";
import type { z } from "zod";
import type { createWebhookEndpointSchema, updateWebhookEndpointSchema, WebhookDelivery, WebhookEndpoint, webhookDeliveryQuerySchema } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { fetchKeysetPage } from "../api/keyset-cursor";
import { assertTargetAllowed } from "../api/target-guard";

/** What the webhook services need (server/api/deps.ts: getWebhookDeps). */
export interface WebhookDeps {
  pool: pg.Pool;
  /** SSRF: the non-public ranges endpoints may use anyway (TICK_SSRF_ALLOWED_CIDRS). */
  allowedCidrs: readonly Cidr[];
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function endpointView(e: sql.EndpointRow): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events as WebhookEndpoint["events"],
    enabled: e.enabled,
    createdAt: e.created_at.toISOString(),
    updatedAt: e.updated_at.toISOString(),
    last24h: { delivered: e.delivered_24h, pending: e.pending_24h, failed: e.failed_24h },
  };
}

function deliveryView(d: sql.DeliveryRow): WebhookDelivery {
  return {
    id: d.id,
    endpointId: d.endpoint_id,
    jobId: d.job_id,
    event: d.event,
    url: d.url,
    status: d.status,
    tries: d.attempts,
    lastStatus: d.last_status,
    lastError: d.last_error,
    lastDurationMs: d.last_duration_ms,
    nextAttemptAt: d.status === "pending" ? d.next_attempt_at.toISOString() : null,
    deliveredAt: iso(d.delivered_at),
    createdAt: d.created_at.toISOString(),
  };
}

const notFound = () => new AppError("not_found", "No such webhook endpoint.");

export async function listEndpoints(deps: WebhookDeps, tenantId: string) {
  return { data: (await sql.listEndpoints(deps.pool, tenantId)).map(endpointView) };
}

export async function getEndpoint(deps: WebhookDeps, tenantId: string, id: string) {
  const row = await sql.findEndpoint(deps.pool, tenantId, id);
  if (!row) throw notFound();
  return endpointView(row);
}

/** A new endpoint: its URL must pass the SSRF rules now (the worker checks again at every connection). */
export async function createEndpoint(deps: WebhookDeps, principal: ApiPrincipal, input: z.output<typeof createWebhookEndpointSchema>) {
  await assertTargetAllowed(input.url, "url", deps.allowedCidrs);
  const tenantId = principal.tenant.id;
  const id = await inTransaction(deps.pool, async (client) => {
    const id = await sql.insertEndpoint(client, tenantId, {
      url: input.url,
      events: [...new Set(input.events)],
      description: input.description ?? null,
      enabled: input.enabled,
      secret: randomBytes(24).toString("base64url"), // unused column (signing uses the tenant's secrets)
    });
    await sql.insertAudit(client, { ...auditActor(principal), action: "webhook_endpoint.created", targetType: "webhook_endpoint", targetId: id, details: { url: input.url, events: input.events } });
    return id;
  });
  return getEndpoint(deps, tenantId, id);
}

export async function updateEndpoint(deps: WebhookDeps, principal: ApiPrincipal, id: string, input: z.output<typeof updateWebhookEndpointSchema>) {
  if (input.url !== undefined) await assertTargetAllowed(input.url, "url", deps.allowedCidrs);
  const tenantId = principal.tenant.id;
  await inTransaction(deps.pool, async (client) => {
    const changed = await sql.updateEndpoint(client, tenantId, id, { ...input, ...(input.events ? { events: [...new Set(input.events)] } : {}) });
    if (!changed) throw notFound();
    await sql.insertAudit(client, { ...auditActor(principal), action: "webhook_endpoint.updated", targetType: "webhook_endpoint", targetId: id, details: { change: input } });
  });
  return getEndpoint(deps, tenantId, id);
}

export async function deleteEndpoint(deps: WebhookDeps, principal: ApiPrincipal, id: string) {
  const before = await getEndpoint(deps, principal.tenant.id, id);
  await inTransaction(deps.pool, async (client) => {
    if (!(await sql.deleteEndpoint(client, principal.tenant.id, id))) throw notFound();
    await sql.insertAudit(client, { ...auditActor(principal), action: "webhook_endpoint.deleted", targetType: "webhook_endpoint", targetId: id, details: { url: before.url } });
  });
  return before;
}

/** A test delivery: signed, sent, retried and logged like any other, so what it shows is what real ones will do. */
export async function testEndpoint(deps: WebhookDeps, principal: ApiPrincipal, id: string) {
  const row = await inTransaction(deps.pool, async (client) => {
    const row = await sql.insertTestDelivery(client, principal.tenant.id, id);
    if (!row) throw notFound();
    await sql.insertAudit(client, { ...auditActor(principal), action: "webhook_endpoint.tested", targetType: "webhook_endpoint", targetId: id, details: { deliveryId: row.id } });
    return row;
  });
  return deliveryView(row);
}

export async function listDeliveries(deps: WebhookDeps, tenantId: string, query: z.output<typeof webhookDeliveryQuerySchema>) {
  const { page, nextCursor } = await fetchKeysetPage(query, (window) => sql.listDeliveries(deps.pool, tenantId, { ...query, ...window }), (r) => r.created_at);
  return { data: page.map(deliveryView), nextCursor };
}

/** One more try, now, for each failed delivery; per-id results, in order. Audited once with the count. */
export async function redeliver(deps: WebhookDeps, principal: ApiPrincipal, ids: string[]) {
  const tenantId = principal.tenant.id;
  const { existing, queued } = await inTransaction(deps.pool, async (client) => {
    const existing = await sql.existingDeliveries(client, tenantId, ids);
    const queued = new Set(await sql.requeueFailedDeliveries(client, tenantId, [...existing]));
    if (queued.size > 0) {
      await sql.insertAudit(client, { ...auditActor(principal), action: "webhook_delivery.redelivered", targetType: "webhook_delivery", details: { count: queued.size, ids: [...queued].slice(0, 20) } });
    }
    return { existing, queued };
  });
  return { results: ids.map((id) => ({ id, result: queued.has(id) ? ("queued" as const) : existing.has(id) ? ("not_failed" as const) : ("not_found" as const) })) };
}
