import { z } from "zod";
import { httpUrlSchema, nullableTimestamp, timestamp } from "./common.js";

export const signingSecretSchema = z
  .object({
    secret: z.string().meta({ description: "whsec_... (Standard Webhooks); verifies webhook-signature" }),
    createdAt: timestamp,
    expiresAt: nullableTimestamp.meta({ description: "Set on old secrets during a rotation's overlap" }),
  })
  .meta({ id: "SigningSecret" });

export const signingSecretListSchema = z.object({ data: z.array(signingSecretSchema) }).meta({ id: "SigningSecretList" });

export const rotateSecretSchema = z
  .strictObject({
    overlapSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .default(86_400)
      .meta({ description: "How long the current secrets keep signing next to the new one (default 24 h)" }),
  })
  .meta({ id: "RotateSigningSecret" });

/** Events an endpoint can subscribe to: a job's terminal outcomes. (`webhook.test` is sent by a test delivery only.) */
export const WEBHOOK_EVENTS = ["job.succeeded", "job.dead", "job.expired", "job.cancelled", "job.rate_limited"] as const;
export const webhookEventSchema = z.enum(WEBHOOK_EVENTS);

export const webhookEndpointSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    description: z.string().nullable(),
    events: z.array(webhookEventSchema),
    enabled: z.boolean(),
    createdAt: timestamp,
    updatedAt: timestamp,
    /** Deliveries to this endpoint in the last 24 hours, by outcome. */
    last24h: z.object({ delivered: z.number().int(), pending: z.number().int(), failed: z.number().int() }),
  })
  .meta({ id: "WebhookEndpoint" });

export const webhookEndpointListSchema = z.object({ data: z.array(webhookEndpointSchema) }).meta({ id: "WebhookEndpointList" });

export const createWebhookEndpointSchema = z
  .strictObject({
    url: httpUrlSchema,
    events: z.array(webhookEventSchema).min(1).max(WEBHOOK_EVENTS.length),
    description: z.string().trim().max(200).optional(),
    enabled: z.boolean().default(true),
  })
  .meta({ id: "CreateWebhookEndpoint" });

export const updateWebhookEndpointSchema = z
  .strictObject({
    url: httpUrlSchema.optional(),
    events: z.array(webhookEventSchema).min(1).max(WEBHOOK_EVENTS.length).optional(),
    description: z.string().trim().max(200).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .refine((s) => Object.keys(s).length > 0, { message: "give at least one field" })
  .meta({ id: "UpdateWebhookEndpoint" });

export const webhookDeliverySchema = z
  .object({
    id: z.uuid(),
    endpointId: z.uuid().nullable().meta({ description: "Null for a delivery to the job's own callback URL" }),
    jobId: z.uuid().nullable().meta({ description: "Null for a test delivery" }),
    event: z.string(),
    url: z.string(),
    status: z.enum(["pending", "delivered", "failed"]),
    tries: z.number().int(),
    lastStatus: z.number().int().nullable().meta({ description: "HTTP status of the last try" }),
    lastError: z.string().nullable(),
    lastDurationMs: z.number().int().nullable().meta({ description: "How long the last try took" }),
    nextAttemptAt: nullableTimestamp.meta({ description: "When a pending delivery is tried next" }),
    deliveredAt: nullableTimestamp,
    createdAt: timestamp,
  })
  .meta({ id: "WebhookDelivery" });

export const webhookDeliveryPageSchema = z
  .object({ data: z.array(webhookDeliverySchema), nextCursor: z.string().nullable() })
  .meta({ id: "WebhookDeliveryPage" });

export const webhookDeliveryQuerySchema = z.object({
  endpointId: z.uuid().optional(),
  jobId: z.uuid().optional(),
  status: z.enum(["pending", "delivered", "failed"]).optional(),
  event: z.string().max(50).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
});

export const redeliverSchema = z.strictObject({ ids: z.array(z.uuid()).min(1).max(100) }).meta({ id: "Redeliver" });

export const redeliverResultSchema = z
  .object({
    results: z.array(
      z.object({
        id: z.uuid(),
        result: z.enum(["queued", "not_found", "not_failed"]).meta({ description: "queued: it is sent again now; not_failed: it is pending or delivered" }),
      }),
    ),
  })
  .meta({ id: "RedeliverResult" });

export type WebhookEndpoint = z.output<typeof webhookEndpointSchema>;
export type WebhookDelivery = z.output<typeof webhookDeliverySchema>;
