import type pg from "pg";
import { z } from "zod";
import { ensureSigningSecrets, sql } from "@tick/db";
import { computeBackoffMs, formatTraceparent, storedTraceContext } from "@tick/core";
import { NO_TRACING, type Logger, type Tracing } from "@tick/runtime";
import type { HttpCaller } from "./http-call.js";
import { signWebhook } from "./webhook-signing.js";

const messageSchema = z.object({ deliveryId: z.uuid(), try: z.number().int().optional() });

export interface WebhookDeliveryConfig {
  maxTries: number;
  timeoutMs: number;
  /** Retry delay base: 2^(try-1) * base, capped. */
  retryBaseMs: number;
  retryMaxMs: number;
}

export type DeliveryOutcome = "delivered" | "retrying" | "failed" | "skipped";

/** What a delivery try came to, for the metrics: whose, its outcome, and (once delivered) its lag in seconds. */
export interface DeliveryObservation {
  tenantId: string | null;
  outcome: DeliveryOutcome;
  lagSeconds: number | null;
}

/**
 * Sends one completion webhook, signed per the Standard Webhooks scheme (webhook-id stays the same
 * across retries so receivers can deduplicate), and records the try. Failures retry with exponential
 * backoff through a new outbox row; after `maxTries` the delivery is marked failed (visible, never dropped).
 */
export interface WebhookDeliveryDeps {
  pool: pg.Pool;
  http: HttpCaller;
  logger: Logger;
  /** Each try is a "webhook" span, a child of the job's trace; absent: off. */
  tracing?: Tracing;
  observe?: (o: DeliveryObservation) => void;
}

export async function deliverWebhook(
  deps: WebhookDeliveryDeps,
  config: WebhookDeliveryConfig,
  raw: unknown,
): Promise<DeliveryOutcome> {
  const outcome = await deliver(deps, config, raw);
  deps.observe?.(outcome);
  return outcome.outcome;
}

async function deliver(deps: WebhookDeliveryDeps, config: WebhookDeliveryConfig, raw: unknown): Promise<DeliveryObservation> {
  const skipped = { tenantId: null, outcome: "skipped", lagSeconds: null } as const;
  const parsed = messageSchema.safeParse(raw);
  if (!parsed.success) return skipped;
  let delivery = await sql.loadPendingDelivery(deps.pool, parsed.data.deliveryId);
  if (!delivery) return skipped; // already delivered or failed: a duplicate message
  if (delivery.secrets.length === 0) {
    // First webhook of this tenant: mint its signing secret.
    await ensureSigningSecrets(deps.pool, delivery.tenant_id);
    delivery = await sql.loadPendingDelivery(deps.pool, parsed.data.deliveryId);
    if (!delivery) return skipped;
  }
  const body = JSON.stringify(delivery.payload);
  const timestamp = Math.floor(Date.now() / 1000);
  const tries = delivery.attempts + 1;
  // The try's span, a child of the job's trace: the receiver gets its IDs as the traceparent, so the
  // webhook joins the trace of the job it reports (a test delivery, with no job, starts its own).
  const tracing = deps.tracing ?? NO_TRACING;
  const parent = storedTraceContext(delivery.traceparent, delivery.tracestate);
  const span = tracing.startSpan("webhook", {
    kind: "client",
    parent,
    attributes: tracing.enabled
      ? {
          "tick.tenant.id": delivery.tenant_id,
          "tick.job.id": delivery.job_id,
          "tick.webhook.delivery_id": delivery.id,
          "tick.webhook.event": delivery.event,
          "tick.webhook.try": tries,
          "http.request.method": "POST",
          "server.address": hostOf(delivery.url),
        }
      : undefined,
  });
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "tick-webhooks/1",
    "webhook-id": delivery.id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signWebhook(delivery.secrets, delivery.id, timestamp, body),
    traceparent: formatTraceparent(span.context),
  };
  if (span.context.traceState) headers.tracestate = span.context.traceState;
  const result = await deps.http.call({ method: "POST", url: delivery.url, headers, body, timeoutMs: config.timeoutMs });
  const delivered = result.status !== undefined && result.status >= 200 && result.status < 300;
  const retryInMs = delivered || tries >= config.maxTries || result.blocked ? null : computeBackoffMs({ strategy: "exponential", baseMs: config.retryBaseMs, maxMs: config.retryMaxMs, jitter: "none" }, tries, Math.random);
  const error = delivered ? null : (result.blocked ?? result.networkError ?? (result.timedOut ? "timed out" : `HTTP ${result.status}`));
  span.setAttributes({ "http.response.status_code": result.status });
  if (error !== null) span.fail(error);
  span.end();
  const recorded = await sql.recordDeliveryTry(deps.pool, delivery.id, { delivered, status: result.status ?? null, error, retryInMs, durationMs: result.durationMs });
  if (!delivered) deps.logger.warn({ tenantId: delivery.tenant_id, jobId: delivery.job_id, deliveryId: delivery.id, tries, error, retryInMs }, "webhook delivery failed");
  const outcome = delivered ? "delivered" : retryInMs === null ? "failed" : "retrying";
  return { tenantId: delivery.tenant_id, outcome, lagSeconds: delivered ? recorded.ageSeconds : null };
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}
