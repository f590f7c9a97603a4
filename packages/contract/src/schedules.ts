import { z } from "zod";
import { backoffSchema, httpTargetSchema } from "./jobs.js";
import { flowKeySchema } from "./flow-keys.js";
import { httpUrlSchema, nullableTimestamp, page, timestamp, uuid } from "./common.js";

const policies = {
  dstGapPolicy: z.enum(["shift_forward", "skip"]).meta({ description: "A local time that does not exist (spring forward): fire at the first valid instant after the gap, or skip it" }),
  dstOverlapPolicy: z.enum(["first", "last", "both"]).meta({ description: "A local time that happens twice (fall back): fire on the first, the last, or both" }),
  misfirePolicy: z.enum(["skip", "run_latest", "catch_up"]).meta({
    description: "Occurrences missed during downtime: skip them, run once for the latest (saying how many it coalesced), or run each (at most maxCatchUp)",
  }),
};

export const scheduleJobTemplateSchema = z
  .strictObject({
    target: httpTargetSchema,
    priority: z.number().int().min(-1000).max(1000).optional(),
    maxAttempts: z.number().int().min(1).max(100).optional(),
    backoff: backoffSchema.optional(),
    callbackUrl: httpUrlSchema.optional(),
    dependencyKey: z.string().min(1).max(200).optional(),
    flowKey: flowKeySchema.optional().meta({ description: "Each occurrence's job carries this flow key (the queue's per-key limits and fair share apply)" }),
    metadata: z.record(z.string().max(100), z.unknown()).optional(),
    expiresAfterMs: z.number().int().min(1000).max(366 * 86_400_000).optional().meta({ description: "Each occurrence's job expires this long after its due time" }),
  })
  .meta({ id: "ScheduleJobTemplate" });

const ruleFields = {
  cron: z.string().min(9).max(200).meta({ description: "5 fields (minute hour day month weekday) or 6 with seconds first, read in `timezone`" }),
  timezone: z.string().min(1).max(64).meta({ description: "IANA zone, e.g. Europe/Paris (fixed offsets are refused)" }),
};

export const createScheduleSchema = z
  .strictObject({
    name: z.string().min(1).max(100),
    queue: z.string().min(1).max(63).default("default"),
    ...ruleFields,
    dstGapPolicy: policies.dstGapPolicy.default("shift_forward"),
    dstOverlapPolicy: policies.dstOverlapPolicy.default("first"),
    misfirePolicy: policies.misfirePolicy.default("skip"),
    maxCatchUp: z.number().int().min(1).max(1000).default(10),
    misfireThresholdMs: z.number().int().min(1000).max(86_400_000).default(60_000),
    paused: z.boolean().default(false),
    job: scheduleJobTemplateSchema,
  })
  .meta({ id: "CreateSchedule" });

export const updateScheduleSchema = z
  .strictObject({
    cron: ruleFields.cron.optional(),
    timezone: ruleFields.timezone.optional(),
    dstGapPolicy: policies.dstGapPolicy.optional(),
    dstOverlapPolicy: policies.dstOverlapPolicy.optional(),
    misfirePolicy: policies.misfirePolicy.optional(),
    maxCatchUp: z.number().int().min(1).max(1000).optional(),
    misfireThresholdMs: z.number().int().min(1000).max(86_400_000).optional(),
    job: scheduleJobTemplateSchema.optional(),
  })
  .refine((u) => Object.keys(u).length > 0, "nothing to update")
  .meta({ id: "UpdateSchedule" });

export const scheduleSchema = z
  .object({
    id: uuid,
    name: z.string(),
    queue: z.string(),
    cron: z.string(),
    timezone: z.string(),
    dstGapPolicy: policies.dstGapPolicy,
    dstOverlapPolicy: policies.dstOverlapPolicy,
    misfirePolicy: policies.misfirePolicy,
    maxCatchUp: z.number().int(),
    misfireThresholdMs: z.number().int(),
    paused: z.boolean(),
    job: z.record(z.string(), z.unknown()),
    nextFireAt: nullableTimestamp,
    lastFireAt: nullableTimestamp.meta({ description: "The latest occurrence that became a job; null until one has" }),
    version: z.number().int(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: "Schedule" });

export type Schedule = z.output<typeof scheduleSchema>;

export const schedulePageSchema = page(scheduleSchema).meta({ id: "SchedulePage" });

export const occurrenceSchema = z
  .object({
    at: timestamp.meta({ description: "The UTC instant it fires" }),
    local: z.string().meta({ description: "Local wall time when it fires (with `offset` it gives `at`)" }),
    nominal: z.string().meta({ description: "Local wall time the cron matched; differs from `local` only where the DST gap policy shifted it" }),
    offset: z.string().meta({ description: "UTC offset at that instant, e.g. +02:00" }),
    dst: z.enum(["gap_shifted", "overlap_first", "overlap_last"]).optional().meta({ description: "Present where the DST policy changed the result" }),
  })
  .meta({ id: "Occurrence" });

export const previewSchema = z.object({ occurrences: z.array(occurrenceSchema) }).meta({ id: "SchedulePreview" });

export const previewQuerySchema = z.object({
  count: z.coerce.number().int().min(1).max(100).default(10),
  after: timestamp.optional().meta({ description: "Preview occurrences after this instant (default: now)" }),
});

export const previewRuleSchema = z
  .strictObject({
    ...ruleFields,
    dstGapPolicy: policies.dstGapPolicy.default("shift_forward"),
    dstOverlapPolicy: policies.dstOverlapPolicy.default("first"),
    count: z.number().int().min(1).max(100).default(10),
    after: timestamp.optional(),
  })
  .meta({ id: "PreviewRule" });
