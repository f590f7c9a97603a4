import { z } from "zod";
import { page, pageQuery, timestamp } from "./common.js";

export const auditEntrySchema = z
  .object({
    id: z.string(),
    actorType: z.string().meta({ description: "user | api_key | operator (a platform operator) | system" }),
    actorId: z.string().nullable(),
    actorName: z.string().meta({ description: "Who, as a person reads it: a user's email, an API key's name and prefix, system" }),
    action: z.string().meta({ description: "e.g. queue.paused, api_key.revoked, job.cancelled, schedule.created" }),
    targetType: z.string().nullable(),
    targetId: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
    createdAt: timestamp,
  })
  .meta({ id: "AuditEntry" });

export const auditQuerySchema = z.object({
  action: z.string().max(100).optional(),
  targetType: z.string().max(50).optional(),
  targetId: z.string().max(100).optional(),
  actorId: z.string().max(100).optional(),
  actorType: z.enum(["user", "api_key", "operator", "system"]).optional(),
  since: timestamp.optional(),
  until: timestamp.optional(),
  ...pageQuery,
});

export const auditPageSchema = page(auditEntrySchema).meta({ id: "AuditPage" });
