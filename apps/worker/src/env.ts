import { z } from "zod";
import { durationSchema } from "@tick/core";
import { baseEnvShape, metricsEnvShape, cidrList, parseEnv, port, positiveInt, processId, serviceEnvShape } from "@tick/runtime";

export const workerEnvSchema = z
  .object({
    ...baseEnvShape,
    ...serviceEnvShape,
    ...metricsEnvShape,
    /** Port of /healthz, /readyz and /metrics. */
    WORKER_HEALTH_PORT: port.default(9465),
    /** Attempts one worker process executes at once. */
    WORKER_CONCURRENCY: positiveInt.max(10_000).default(50),
    /** Identity written into attempt leases; defaults to host:pid. */
    WORKER_ID: processId,
    /** Lease on a running attempt; the reaper retries the job once it has expired (database time). */
    WORKER_LEASE_TTL: durationSchema.default(30_000),
    /** Heartbeat renewing the lease; at most a third of the TTL so two missed beats still keep it. */
    WORKER_HEARTBEAT_INTERVAL: durationSchema.default(10_000),
    /**
     * How long the first start or completion of a batch waits for the worker's other attempts even when no
     * batch is in flight. 0 (the default): group commit only, rows that arrive while a batch statement runs
     * go out together once it returns.
     */
    WORKER_BATCH_LINGER: durationSchema.default(0),
    WORKER_DB_POOL_SIZE: positiveInt.default(10),
    /** Response bytes kept from a target (the rest is read and dropped). */
    WORKER_MAX_RESPONSE_BYTES: positiveInt.default(65_536),
    /** On SIGTERM, how long in-flight attempts may take to finish before the process stops anyway. */
    WORKER_SHUTDOWN_GRACE: durationSchema.default(10_000),
    /** Non-public ranges targets may use (same setting as the console's; re-checked at connect time). */
    TICK_SSRF_ALLOWED_CIDRS: cidrList,
    /** First retry delay of a failed webhook delivery; doubles per try (at most an hour apart). */
    WORKER_WEBHOOK_RETRY_BASE: durationSchema.default(5_000),
    /** Tries of a webhook delivery before it is marked failed (it stays in the log and can be redelivered). */
    WORKER_WEBHOOK_MAX_TRIES: positiveInt.max(100).default(10),
    /** Circuit breaker per dependency: window over which failures are counted. */
    BREAKER_WINDOW: durationSchema.default(60_000),
    /** Fewest outcomes in the window before the breaker may open. */
    BREAKER_MIN_REQUESTS: positiveInt.default(20),
    /** Failure share in the window that opens the breaker. */
    BREAKER_FAILURE_RATE: z.coerce.number().gt(0).lte(1).default(0.5),
    /** How long an open breaker holds the dependency's jobs before one probe is let through. */
    BREAKER_OPEN_FOR: durationSchema.default(30_000),
    /** How often the breaker gauges (tick_breaker_state, tick_breakers_open, the retry budget) are read from Redis. */
    WORKER_BREAKER_METRICS_INTERVAL: durationSchema.default(10_000),
    /** Retries may be at most this share of a dependency's attempts in the window. */
    BREAKER_RETRY_BUDGET: z.coerce.number().gt(0).lte(1).default(0.2),
  })
  .refine((env) => env.WORKER_HEARTBEAT_INTERVAL * 3 <= env.WORKER_LEASE_TTL, {
    message: "must be at most a third of WORKER_LEASE_TTL",
    path: ["WORKER_HEARTBEAT_INTERVAL"],
  });

export type WorkerEnv = z.output<typeof workerEnvSchema>;

export const loadWorkerEnv = (env: Record<string, string | undefined>): WorkerEnv => parseEnv(workerEnvSchema, env);
