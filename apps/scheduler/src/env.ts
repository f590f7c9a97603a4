import { z } from "zod";
import { durationSchema } from "@tick/core";
import { baseEnvShape, metricsEnvShape, parseEnv, port, positiveInt, processId, serviceEnvShape } from "@tick/runtime";
import { parseShardRegions } from "./leases/shard-regions.js";

export const schedulerEnvSchema = z
  .object({
    ...baseEnvShape,
    ...serviceEnvShape,
    ...metricsEnvShape,
    /** Port of /healthz, /readyz and /metrics. */
    SCHEDULER_HEALTH_PORT: port.default(9464),
    /** Number of shards tenants are spread over; every scheduler must agree on it. */
    TICK_SHARDS: positiveInt.max(4096).default(16),
    /**
     * Home regions of shards (S18), e.g. `eu:0-7,us:8-15`: a shard is held by its region's schedulers
     * (TICK_REGION) while one is alive, fails over to another region's when none is, and is handed back.
     * Every scheduler must be given the same value. Empty: any scheduler holds any shard.
     */
    TICK_SHARD_REGIONS: z.string().default(""),
    /** Identity written into shard leases; defaults to host:pid. */
    SCHEDULER_ID: processId,
    /** How long a shard lease lasts without renewal (a dead leader is replaced after about this long). */
    SCHEDULER_LEASE_TTL: durationSchema.default(15_000),
    /** How often leases are renewed; must be well under the TTL so one slow renewal does not lose the shard. */
    SCHEDULER_LEASE_RENEW_INTERVAL: durationSchema.default(5_000),
    /** Pool size for the hot-path SQL. */
    SCHEDULER_DB_POOL_SIZE: positiveInt.default(10),
    /**
     * Longest wait between dispatch rounds when nothing is due: the dispatcher sleeps until the earliest
     * due time its shards' due index lists, or this long if that is later (a safety net for jobs the index
     * has not heard of yet).
     */
    SCHEDULER_DISPATCH_INTERVAL: durationSchema.default(100),
    /**
     * Wait between rounds while due work is left that the last round could not take (the broker queue is
     * full, or the round used its whole batch): short, so a freed place in the queue is filled at once.
     */
    SCHEDULER_DISPATCH_BUSY_INTERVAL: durationSchema.default(5),
    /**
     * Most attempts one broker message carries (a round's claims go out a message per chunk). 100: in
     * interleaved burn-downs, machine CPU per job is 0.468 at 20, 0.44 at 50 and 0.40 at 100, with 200 no
     * better, and the fairness scenario is the same at each (docs/benchmarks.md).
     */
    SCHEDULER_DISPATCH_CHUNK: positiveInt.max(1_000).default(100),
    /** Most jobs claimed per shard per round. */
    SCHEDULER_DISPATCH_BATCH: positiveInt.max(10_000).default(500),
    /**
     * Dispatched-but-not-started attempts allowed per shard: keeps the broker queue shallow so
     * fairness is decided by the scheduler, not lost in a deep FIFO.
     */
    SCHEDULER_MAX_QUEUED_PER_SHARD: positiveInt.default(200),
    /** Global dispatch rate across all schedulers (jobs/s); bounds catch-up after an outage (S12). */
    SCHEDULER_DISPATCH_RATE: z.coerce.number().positive().default(2000),
    /** Most outbox rows the relay publishes per second (drains a backlog without a storm, S10). */
    SCHEDULER_RELAY_RATE: z.coerce.number().positive().default(5000),
    /** How often the reaper looks for lost attempts and expired jobs. */
    SCHEDULER_REAPER_INTERVAL: durationSchema.default(2_000),
    /** Extra time past an attempt's lease end before it is presumed lost (clock skew, slow heartbeats). */
    SCHEDULER_LEASE_GRACE: durationSchema.default(5_000),
    /** A published attempt no worker started within this is re-published (message lost by the broker). */
    SCHEDULER_STRANDED_AFTER: durationSchema.default(60_000),
    /** A broker publish not answered within this counts as failed; the outbox rows are retried. */
    SCHEDULER_PUBLISH_TIMEOUT: durationSchema.default(5_000),
    /** How often each held shard's Redis due index is compared with Postgres and repaired. */
    SCHEDULER_RECONCILE_INTERVAL: durationSchema.default(5_000),
    /** Schedule occurrences become jobs this long before they are due (so they wait in the index on time). */
    SCHEDULER_RECURRENCE_LOOKAHEAD: durationSchema.default(2_000),
    /** How often each held shard looks for due schedule occurrences. */
    SCHEDULER_RECURRENCE_INTERVAL: durationSchema.default(500),
    /** Held shards materialised at once (each its own fenced transaction and connection): one at a time left all but one Postgres core idle. */
    SCHEDULER_RECURRENCE_CONCURRENCY: positiveInt.max(64).default(2),
    /** How often each held shard's DLQ replays are tallied, judged and released (S17). */
    SCHEDULER_REPLAY_INTERVAL: durationSchema.default(250),
    /** How often the maintenance loop moves finished jobs to history and prunes what is past retention. */
    SCHEDULER_MAINTENANCE_INTERVAL: durationSchema.default(1_000),
    /** Most rows per maintenance statement (each in its own short transaction). */
    SCHEDULER_MAINTENANCE_BATCH: positiveInt.max(100_000).default(1_000),
    /** Most time per maintenance round spent deleting expired history (retention yields to dispatch). */
    SCHEDULER_PRUNE_BUDGET: durationSchema.default(100),
    /** Finished jobs stay in the hot tables this long, then move to history (day partitions). */
    TICK_ARCHIVE_AFTER: durationSchema.default(60_000),
    /** Ceiling on any tenant's retention, in days; history partitions older than this are dropped whole. */
    TICK_RETENTION_MAX_DAYS: positiveInt.max(3650).default(90),
    /** Published outbox rows are kept this long before they are deleted. */
    TICK_OUTBOX_KEEP: durationSchema.default(60_000),
    /** How long occurrence jobs hold their idempotency keys (as the API's TICK_IDEMPOTENCY_TTL). */
    TICK_IDEMPOTENCY_TTL: durationSchema.default(24 * 3_600_000),
  })
  .refine((env) => env.SCHEDULER_LEASE_RENEW_INTERVAL * 2 <= env.SCHEDULER_LEASE_TTL, {
    message: "must be at most half of SCHEDULER_LEASE_TTL",
    path: ["SCHEDULER_LEASE_RENEW_INTERVAL"],
  })
  .superRefine((env, ctx) => {
    try {
      parseShardRegions(env.TICK_SHARD_REGIONS, env.TICK_SHARDS);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message, path: ["TICK_SHARD_REGIONS"] });
    }
  });

export type SchedulerEnv = z.output<typeof schedulerEnvSchema>;

export const loadSchedulerEnv = (env: Record<string, string | undefined>): SchedulerEnv => parseEnv(schedulerEnvSchema, env);
