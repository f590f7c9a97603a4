import { z } from "zod";
import { jobWithAttemptsSchema } from "./jobs.js";
import { nullableTimestamp, timestamp } from "./common.js";

// Data lifecycle: a tenant's retention settings and the NDJSON export of its finished jobs.

export const tenantSettingsSchema = z
  .object({
    retentionDays: z.number().int().meta({ description: "Days finished jobs and their attempts are kept in history" }),
    retentionMaxDays: z.number().int().meta({ description: "The deployment's ceiling on retentionDays (history older than this is dropped whatever the tenant says)" }),
    dlqRetentionDays: z.number().int().meta({ description: "Days a dead job waits in the DLQ for a replay before it goes to history" }),
    exportBeforePrune: z.boolean().meta({ description: "Retention deletes only history already covered by a complete export" }),
    exportedThrough: nullableTimestamp.meta({ description: "Every job that finished before this instant was in a complete export" }),
  })
  .meta({ id: "TenantSettings" });

export const updateTenantSettingsSchema = z
  .strictObject({
    retentionDays: z.number().int().min(1).max(3650).optional(),
    dlqRetentionDays: z.number().int().min(1).max(3650).optional(),
    exportBeforePrune: z.boolean().optional(),
  })
  .refine((s) => Object.keys(s).length > 0, { message: "give at least one setting" })
  .meta({ id: "UpdateTenantSettings" });

export const exportJobsQuerySchema = z
  .object({
    from: timestamp.optional().meta({ description: "Jobs that finished at or after this instant; omit to start at the oldest kept" }),
    to: timestamp.optional().meta({ description: "Jobs that finished before this instant; capped at (and by default) one minute before the database's now" }),
  })
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) < Date.parse(q.to), { message: "from must be before to", path: ["from"] });

export const jobExportLineSchema = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("job"), job: jobWithAttemptsSchema }),
    z.object({
      type: z.literal("end"),
      count: z.number().int().meta({ description: "Jobs in this export" }),
      from: nullableTimestamp,
      to: timestamp,
      exportedThrough: nullableTimestamp.meta({ description: "The tenant's export mark after this export" }),
    }),
  ])
  .meta({
    id: "JobExportLine",
    description: "One line of the NDJSON export: a finished job with its attempts, and last an `end` line. A stream without the end line was cut off.",
  });
