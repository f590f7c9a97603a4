import { z } from "zod";
import { timestamp, uuid } from "./common.js";

/** A flow key: any string the tenant names what it isolates with, up to 255 characters. */
export const flowKeySchema = z.string().min(1).max(255);

/** A token bucket: `limit` dispatches per `periodMs`, with a burst of `limit`. */
export const keyRateSchema = z
  .strictObject({
    limit: z.number().int().min(1).max(100_000),
    periodMs: z.number().int().min(100).max(86_400_000),
  })
  .meta({ id: "KeyRate", description: "At most `limit` dispatches per `periodMs` for each flow key (a token bucket: a burst of `limit`, then `limit` per period)" });

/** A queue's limits for each of its flow keys (overrides per key win). */
export const queueKeyLimits = {
  perKeyConcurrency: z.number().int().min(1).max(100_000).nullable().meta({ description: "Attempts in flight at once per flow key; null: no per-key cap" }),
  perKeyRate: keyRateSchema.nullable().meta({ description: "Dispatches per period per flow key; null: no per-key rate" }),
  perKeyRateMode: z.enum(["delay", "drop"]).meta({
    description: "What happens to a key's due jobs beyond its rate: delay (throttle: they wait for tokens, nothing is lost) or drop (rate limit: they end rate_limited, with a job.rate_limited webhook)",
  }),
};

export const putFlowKeySchema = z
  .strictObject({
    concurrency: z.number().int().min(0).max(100_000).nullable().optional().meta({ description: "This key's cap on attempts in flight (overrides the queue's perKeyConcurrency); null: the queue's" }),
    rate: keyRateSchema.nullable().optional().meta({ description: "This key's rate (overrides the queue's perKeyRate); null: the queue's" }),
    weight: z.number().int().min(1).max(1_000).nullable().optional().meta({ description: "This key's share of the queue against other keys with due jobs (default 1)" }),
    paused: z.boolean().optional().meta({ description: "Holds the key's jobs, scheduled; false releases them through the same paced claim as any backlog" }),
  })
  .refine((o) => Object.keys(o).length > 0, "nothing to set")
  .meta({ id: "PutFlowKey" });

export const flowKeyStateSchema = z
  .object({
    key: z.string(),
    queue: z.string(),
    due: z.number().int().meta({ description: "Jobs of this key scheduled and due now" }),
    scheduled: z.number().int().meta({ description: "Jobs of this key scheduled, due or not" }),
    inFlight: z.number().int().meta({ description: "Attempts of this key dispatched or running (the count the claim enforces the cap on)" }),
    oldestDueAgeMs: z.number().int().nullable().meta({ description: "How long this key's oldest due job has waited past its due time" }),
    paused: z.boolean(),
    concurrency: z.number().int().nullable().meta({ description: "The cap in force: the override, else the queue's perKeyConcurrency; null: none" }),
    rate: keyRateSchema.nullable().meta({ description: "The rate in force: the override, else the queue's perKeyRate; null: none" }),
    weight: z.number().int(),
    override: z
      .object({ concurrency: z.number().int().nullable(), rate: keyRateSchema.nullable(), weight: z.number().int().nullable(), paused: z.boolean(), setAt: timestamp })
      .nullable()
      .meta({ description: "What the tenant set for this key (PUT); null: the key follows the queue's limits" }),
  })
  .meta({ id: "FlowKey" });

export type FlowKeyView = z.output<typeof flowKeyStateSchema>;

export const FLOW_KEY_SORTS = ["backlog", "in_flight", "waiting"] as const;

export const listFlowKeysQuerySchema = z.object({
  sort: z.enum(FLOW_KEY_SORTS).default("backlog").meta({ description: "backlog: most due first; in_flight: most in flight first; waiting: oldest due job first" }),
  limit: z.coerce.number().int().min(1).max(200).default(20),
  paused: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === "true"))
    .meta({ description: "Only paused keys (true), or only running ones (false)" }),
  overridden: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === "true"))
    .meta({ description: "Only keys with an override (true)" }),
});

export const flowKeyListSchema = z
  .object({
    data: z.array(flowKeyStateSchema),
    totals: z.object({
      keysWithWork: z.number().int().meta({ description: "Keys with a scheduled or in-flight job" }),
      keysAtCap: z.number().int().meta({ description: "Keys with due jobs held by their concurrency cap" }),
      keysPaused: z.number().int(),
    }),
  })
  .meta({ id: "FlowKeyList" });

export const WAITING_CODES = [
  "not_due",
  "queue_paused",
  "key_paused",
  "dependency_paused",
  "breaker_open",
  "tenant_suspended",
  "tenant_at_cap",
  "queue_at_cap",
  "key_at_cap",
  "key_over_rate",
  "queue_over_rate",
  "fair_share",
  "dispatching",
  "awaiting_worker",
] as const;
export type WaitingCode = (typeof WAITING_CODES)[number];

export const waitingSchema = z
  .object({
    code: z.enum(WAITING_CODES).meta({ description: "Stable: what holds the job (docs/api.md \"Why is this job waiting?\")" }),
    message: z.string().meta({ description: "The same in words, with the figures" }),
    inFlight: z.number().int().optional().meta({ description: "key_at_cap, queue_at_cap, tenant_at_cap: attempts in flight" }),
    cap: z.number().int().optional().meta({ description: "key_at_cap, queue_at_cap, tenant_at_cap: the cap" }),
    inFlightJobIds: z.array(uuid).optional().meta({ description: "key_at_cap: the key's jobs in flight (at most 20)" }),
    nextTokenAt: timestamp.optional().meta({ description: "key_over_rate, queue_over_rate: when the next dispatch is allowed" }),
    ahead: z.number().int().optional().meta({ description: "fair_share: due jobs of other keys and tenants ahead of this one in the shard" }),
    until: timestamp.optional().meta({ description: "not_due: the due time; breaker_open: when the breaker half-opens" }),
  })
  .meta({ id: "Waiting" });

export type Waiting = z.output<typeof waitingSchema>;
