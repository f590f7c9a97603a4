import { z } from "zod";
import { nullableTimestamp, timestamp } from "./common.js";

/** One shard's lease as the database has it (shard_leases, the table every fenced write checks). */
export const shardStatusSchema = z
  .object({
    shard: z.number().int(),
    holder: z.string().nullable().meta({ description: "The scheduler holding the lease; null when released" }),
    region: z.string().nullable(),
    epoch: z.string().meta({ description: "Raised by every acquisition; a takeover shows as a higher epoch (decimal string)" }),
    expiresAt: nullableTimestamp,
    held: z.boolean().meta({ description: "Held now: a holder and an unexpired lease, by the database clock" }),
    dueIndex: z
      .enum(["index", "polling", "unknown"])
      .nullable()
      .meta({ description: "How the holder finds the shard's due work: the Redis due index, or polling Postgres (S9); null when not held" }),
  })
  .meta({ id: "ShardStatus" });

/** A process's own /readyz answer, fetched by the console from the address the process registered. */
export const readinessSchema = z
  .object({
    status: z.enum(["ready", "not_ready", "starting", "shutting_down", "unreachable", "unknown"]),
    httpStatus: z.number().int().nullable(),
    failed: z.record(z.string(), z.string()).meta({ description: "Failing checks and their errors" }),
    checks: z.array(z.string()).meta({ description: "The checks it ran (ready answers)" }),
  })
  .meta({ id: "Readiness" });

export const nodeStatusSchema = z
  .object({
    role: z.enum(["scheduler", "worker"]),
    id: z.string(),
    region: z.string().nullable(),
    version: z.string().nullable(),
    startedAt: nullableTimestamp,
    lastHeartbeatAt: timestamp,
    heartbeatAgeSeconds: z.number().meta({ description: "Since its last heartbeat, by the database clock" }),
    live: z.boolean().meta({ description: "Its heartbeat has not expired; a process gone within the last 10 minutes stays listed with false" }),
    shards: z.array(z.number().int()).meta({ description: "Schedulers: the shards whose lease it holds now" }),
    readiness: readinessSchema,
  })
  .meta({ id: "NodeStatus" });

export const breakerStatusSchema = z
  .object({
    dependency: z.string(),
    openTenants: z.number().int(),
    tenantIds: z.array(z.string()).meta({ description: "The tenants whose breaker for this dependency is open (at most 50)" }),
  })
  .meta({ id: "OpenBreakers" });

export const platformStatusSchema = z
  .object({
    checkedAt: timestamp.meta({ description: "The database's clock when the status was read" }),
    shardCount: z.number().int(),
    shards: z.array(shardStatusSchema),
    nodes: z.array(nodeStatusSchema),
    outbox: z.object({
      backlog: z.number().int().meta({ description: "Unpublished outbox rows" }),
      lagSeconds: z.number().meta({ description: "Age of the oldest unpublished row (0 when none), as tick_outbox_lag_seconds" }),
    }),
    breakers: z
      .object({
        available: z.boolean().meta({ description: "false: Redis did not answer, so open breakers are unknown" }),
        open: z.array(breakerStatusSchema),
      }),
  })
  .meta({ id: "PlatformStatus" });

export type PlatformStatus = z.output<typeof platformStatusSchema>;
export type ShardStatus = z.output<typeof shardStatusSchema>;
export type NodeStatus = z.output<typeof nodeStatusSchema>;
export type Readiness = z.output<typeof readinessSchema>;
