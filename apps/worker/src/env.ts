import os from "node:os";
import { z } from "zod";
import { durationSchema } from "@tick/core";
import { baseEnvShape, parseEnv, port, positiveInt } from "@tick/runtime";

export const workerEnvSchema = z
  .object({
    ...baseEnvShape,
    /** Port of /healthz, /readyz and /metrics. */
    WORKER_HEALTH_PORT: port.default(9465),
    /** Attempts one worker process executes at once. */
    WORKER_CONCURRENCY: positiveInt.max(10_000).default(50),
    /** Identity written into attempt leases; defaults to host:pid. */
    WORKER_ID: z.string().min(1).default(`${os.hostname()}:${process.pid}`),
    /** Lease on a running attempt; the reaper retries the job once it has expired (database time). */
    WORKER_LEASE_TTL: durationSchema.default(30_000),
    /** Heartbeat renewing the lease; at most a third of the TTL so two missed beats still keep it. */
    WORKER_HEARTBEAT_INTERVAL: durationSchema.default(10_000),
    WORKER_DB_POOL_SIZE: positiveInt.default(10),
  })
  .refine((env) => env.WORKER_HEARTBEAT_INTERVAL * 3 <= env.WORKER_LEASE_TTL, {
    message: "must be at most a third of WORKER_LEASE_TTL",
    path: ["WORKER_HEARTBEAT_INTERVAL"],
  });

export type WorkerEnv = z.output<typeof workerEnvSchema>;

export const loadWorkerEnv = (env: Record<string, string | undefined>): WorkerEnv => parseEnv(workerEnvSchema, env);
