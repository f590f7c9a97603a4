import { z } from "zod";
import { backoffSchema } from "./jobs.js";
import { timestamp } from "./common.js";
import { queueKeyLimits } from "./flow-keys.js";

export const queueNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,62}$/, "lowercase letters, digits, '.', '_' or '-', at most 63, starting with a letter or digit");

const queueSettings = {
  concurrency: z.number().int().min(1).max(100_000).nullable().meta({ description: "Attempts in flight at once; null: only the tenant cap" }),
  ratePerSecond: z
    .number()
    .positive()
    .max(100_000)
    .nullable()
    .meta({
      description:
        "Dispatches per second, held in every one-second window of the database clock across all schedulers; a fractional " +
        "rate carries over from second to second (0.5: one every other second; 2.5: 2 and 3 alternately); null: unlimited",
    }),
  defaultMaxAttempts: z.number().int().min(1).max(100),
  defaultBackoff: backoffSchema,
  defaultTimeoutMs: z.number().int().min(100).max(300_000),
  ...queueKeyLimits,
};

export const createQueueSchema = z
  .object({
    name: queueNameSchema,
    concurrency: queueSettings.concurrency.optional(),
    ratePerSecond: queueSettings.ratePerSecond.optional(),
    defaultMaxAttempts: queueSettings.defaultMaxAttempts.optional(),
    defaultBackoff: queueSettings.defaultBackoff.optional(),
    defaultTimeoutMs: queueSettings.defaultTimeoutMs.optional(),
    perKeyConcurrency: queueSettings.perKeyConcurrency.optional(),
    perKeyRate: queueSettings.perKeyRate.optional(),
    perKeyRateMode: queueSettings.perKeyRateMode.optional(),
  })
  .meta({ id: "CreateQueue" });

export const updateQueueSchema = z
  .object({
    concurrency: queueSettings.concurrency.optional(),
    ratePerSecond: queueSettings.ratePerSecond.optional(),
    defaultMaxAttempts: queueSettings.defaultMaxAttempts.optional(),
    defaultBackoff: queueSettings.defaultBackoff.optional(),
    defaultTimeoutMs: queueSettings.defaultTimeoutMs.optional(),
    perKeyConcurrency: queueSettings.perKeyConcurrency.optional(),
    perKeyRate: queueSettings.perKeyRate.optional(),
    perKeyRateMode: queueSettings.perKeyRateMode.optional(),
  })
  .refine((u) => Object.keys(u).length > 0, "nothing to update")
  .meta({ id: "UpdateQueue" });

export const queueSchema = z
  .object({
    name: z.string(),
    paused: z.boolean(),
    ...queueSettings,
    version: z.number().int(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: "Queue" });

export type Queue = z.output<typeof queueSchema>;

export const queueStatsSchema = z
  .object({
    due: z.number().int().meta({ description: "Jobs scheduled and due now" }),
    scheduled: z.number().int().meta({ description: "Jobs waiting, due or not" }),
    inFlight: z.number().int().meta({ description: "Jobs dispatched or running" }),
    oldestDueAgeMs: z
      .number()
      .int()
      .nullable()
      .meta({ description: "How long the oldest due job has waited past its due time (database clock); null when none is due" }),
  })
  .meta({ id: "QueueStats" });

/** A queue in the list, with its live figures. */
export const queueWithStatsSchema = z
  .object({ ...queueSchema.shape, stats: queueStatsSchema })
  .meta({ id: "QueueWithStats" });

export type QueueStats = z.output<typeof queueStatsSchema>;
export type QueueWithStats = z.output<typeof queueWithStatsSchema>;
