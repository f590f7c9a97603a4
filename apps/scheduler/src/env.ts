import os from "node:os";
import { z } from "zod";
import { durationSchema } from "@tick/core";
import { baseEnvShape, parseEnv, port, positiveInt } from "@tick/runtime";

export const schedulerEnvSchema = z
  .object({
    ...baseEnvShape,
    /** Port of /healthz, /readyz and /metrics. */
    SCHEDULER_HEALTH_PORT: port.default(9464),
    /** Number of shards tenants are spread over; every scheduler must agree on it. */
    TICK_SHARDS: positiveInt.max(4096).default(16),
    /** Identity written into shard leases; defaults to host:pid. */
    SCHEDULER_ID: z.string().min(1).default(`${os.hostname()}:${process.pid}`),
    /** How long a shard lease lasts without renewal (a dead leader is replaced after about this long). */
    SCHEDULER_LEASE_TTL: durationSchema.default(15_000),
    /** How often leases are renewed; must be well under the TTL so one slow renewal does not lose the shard. */
    SCHEDULER_LEASE_RENEW_INTERVAL: durationSchema.default(5_000),
    /** Pool size for the hot-path SQL. */
    SCHEDULER_DB_POOL_SIZE: positiveInt.default(10),
  })
  .refine((env) => env.SCHEDULER_LEASE_RENEW_INTERVAL * 2 <= env.SCHEDULER_LEASE_TTL, {
    message: "must be at most half of SCHEDULER_LEASE_TTL",
    path: ["SCHEDULER_LEASE_RENEW_INTERVAL"],
  });

export type SchedulerEnv = z.output<typeof schedulerEnvSchema>;

export const loadSchedulerEnv = (env: Record<string, string | undefined>): SchedulerEnv => parseEnv(schedulerEnvSchema, env);
