import type pg from "pg";
import { Worker } from "bullmq";
import { ATTEMPT_QUEUE, WEBHOOK_QUEUE, type Cidr } from "@tick/core";
import { createBreakers, type BreakerPolicy } from "@tick/breaker";
import { createDueIndex } from "@tick/due-index";
import { ensureSigningSecrets, type sql } from "@tick/db";
import { NO_FAULTS, NO_TRACING, type MetricLabels, type ServiceDeps } from "@tick/runtime";
import { createAttemptCompleter } from "./execution/attempt-completer.js";
import { createLeaseKeeper } from "./execution/attempt-lease.js";
import { runAttempt, runMessage } from "./execution/attempt-runner.js";
import { createAttemptStarter } from "./execution/attempt-starter.js";
import { observeBreakers } from "./execution/breaker-metrics.js";
import { createCallSlots } from "./execution/call-slots.js";
import { deliverWebhook, type DeliveryObservation } from "./execution/webhook-delivery.js";
import { createHttpCaller } from "./execution/http-call.js";
import { createWorkerMetrics } from "./metrics.js";

interface WorkerConfig {
  id: string;
  redisPrefix: string;
  /** Calls to targets in flight at once; as many more attempts may be starting, and twice as many messages held. */
  concurrency: number;
  leaseMs: number;
  heartbeatMs: number;
  /** How long the first start or completion of a batch waits for others when none is in flight (default 0). */
  batchLingerMs?: number;
  allowedCidrs: readonly Cidr[];
  maxResponseBytes: number;
  shutdownGraceMs: number;
  /** First webhook retry delay (doubles per try, capped at an hour). */
  webhookRetryBaseMs: number;
  /** Tries before a delivery is marked failed (default 10). */
  webhookMaxTries?: number;
  /** How often the breaker gauges are read from Redis (default 10 s). */
  breakerMetricsIntervalMs?: number;
  breaker: Partial<BreakerPolicy>;
}

export interface WorkerDeps extends ServiceDeps<pg.Pool> {
  config: WorkerConfig;
  /** Bounds the tenant, queue and dependency labels of the metrics (TICK_METRICS_*; defaults when absent). */
  metricLabels?: MetricLabels;
}

/** How often the breaker gauges (state, retry budget, open breakers) are read from Redis, unless configured. */
const BREAKER_METRICS_INTERVAL_MS = 10_000;

/** Consumes dispatch messages from BullMQ and runs each as one attempt. */
export function createAttemptWorker(deps: WorkerDeps) {
  const { pool, logger, config } = deps;
  const metrics = createWorkerMetrics(deps.registry, deps.metricLabels);
  const http = createHttpCaller({ allowedCidrs: config.allowedCidrs, maxResponseBytes: config.maxResponseBytes, connections: config.concurrency });
  const dueIndex = createDueIndex({ redis: deps.indexRedis, prefix: config.redisPrefix });
  // Secrets change rarely (rotation keeps the old ones valid for an overlap): a 30 s cache is enough.
  const secretCache = new Map<string, { at: number; secrets: Promise<string[]> }>();
  const secretsFor = (tenantId: string) => {
    const hit = secretCache.get(tenantId);
    if (hit && Date.now() - hit.at < 30_000) return hit.secrets;
    const secrets = ensureSigningSecrets(pool, tenantId).then((rows) => rows.map((r) => r.secret));
    secretCache.set(tenantId, { at: Date.now(), secrets });
    secrets.catch(() => secretCache.delete(tenantId));
    return secrets;
  };
  // Starts, completions and lease renewals of the concurrent attempts go to Postgres together.
  const batch = { lingerMs: config.batchLingerMs ?? 0, maxBatch: config.concurrency };
  // Scheduling lag (S12, S16): start − due, both by the database clock; O(1) per attempt, in memory. Batched
  // starts report it from the starter, single ones (replayed jobs, a failed batch's rows) from the runner.
  const observeLag = (s: sql.StartedAttempt) =>
    metrics.schedulingLag.observe(metrics.labels.tenantQueue(s.tenant_id, s.queue), Math.max(0, (s.db_now.getTime() - s.due_at.getTime()) / 1000));
  const starter = createAttemptStarter({
    pool,
    logger,
    workerId: config.id,
    leaseMs: config.leaseMs,
    ...batch,
    onStarted: observeLag,
  });
  const completer = createAttemptCompleter({ pool, logger, ...batch });
  const leases = createLeaseKeeper({ pool, leaseMs: config.leaseMs, heartbeatMs: config.heartbeatMs });
  const breakerMetrics = observeBreakers(createBreakers({ redis: deps.indexRedis, prefix: config.redisPrefix, policy: config.breaker }), metrics);
  const tracing = deps.tracing ?? NO_TRACING;
  const runnerDeps = {
    pool,
    tracing,
    onStarted: observeLag,
    slots: createCallSlots(config.concurrency),
    startSlots: createCallSlots(config.concurrency),
    starter,
    completer,
    leases,
    secretsFor,
    breakers: breakerMetrics.breakers,
    http,
    logger,
    metrics,
    faults: deps.faults ?? NO_FAULTS,
    noteDue: (shard: number, tenantId: string, dueAtMs: number) => dueIndex.noteDue(shard, tenantId, dueAtMs),
  };
  metrics.watchSlots("call", runnerDeps.slots);
  metrics.watchSlots("start", runnerDeps.startSlots);
  const runnerConfig = { workerId: config.id, leaseMs: config.leaseMs, heartbeatMs: config.heartbeatMs };

  const webhookConfig = { maxTries: config.webhookMaxTries ?? 10, timeoutMs: 10_000, retryBaseMs: config.webhookRetryBaseMs, retryMaxMs: 3_600_000 };
  const observeDelivery = (o: DeliveryObservation) => {
    metrics.webhookDeliveries.inc({ tenant: metrics.labels.tenant(o.tenantId), outcome: o.outcome });
    if (o.lagSeconds !== null) metrics.webhookLag.observe(o.lagSeconds);
  };
  let worker: Worker | undefined;
  let webhookWorker: Worker | undefined;
  let breakerTimer: NodeJS.Timeout | undefined;
  const refreshBreakerMetrics = () => breakerMetrics.refresh().catch((err: unknown) => logger.debug({ err: (err as Error).message }, "breaker metrics not refreshed (Redis?)"));
  return {
    metrics,
    /** Reads the breakers into their gauges now (tests; the worker does it every 10 s). */
    refreshBreakerMetrics: () => breakerMetrics.refresh(),
    /** Runs one message directly (tests). */
    run: (data: unknown) => runAttempt(runnerDeps, runnerConfig, data),
    start() {
      worker = new Worker(ATTEMPT_QUEUE, (job) => runMessage(runnerDeps, runnerConfig, job.data), {
        connection: deps.redis,
        prefix: `${config.redisPrefix}:bull`,
        // Twice the call slots: the broker hand-over and the completions overlap the calls.
        concurrency: 2 * config.concurrency,
        // Retries and lost workers are handled in Postgres (leases, reaper); a stalled message that
        // BullMQ hands out again is recognised by its attempt ID and discarded.
        maxStalledCount: 1,
        // A worker that dies holding a message it had not started yet: BullMQ offers the message again
        // once its lock lapses, so the lock lasts what an attempt lease lasts (not BullMQ's 30 s default).
        lockDuration: config.leaseMs,
        stalledInterval: config.leaseMs,
      });
      let lastError = 0;
      worker.on("error", (err) => {
        if (Date.now() - lastError < 10_000) return;
        lastError = Date.now();
        logger.warn({ err: err.message }, "broker connection error");
      });
      worker.on("failed", (job, err) => logger.error({ err, messageId: job?.id }, "attempt message handler failed"));
      webhookWorker = new Worker(WEBHOOK_QUEUE, (job) => deliverWebhook({ pool, http, logger, tracing, observe: observeDelivery }, webhookConfig, job.data), {
        connection: deps.redis,
        prefix: `${config.redisPrefix}:bull`,
        concurrency: Math.max(1, Math.floor(config.concurrency / 4)),
      });
      webhookWorker.on("error", () => {});
      webhookWorker.on("failed", (job, err) => logger.error({ err, messageId: job?.id }, "webhook message handler failed"));
      void refreshBreakerMetrics();
      breakerTimer = setInterval(() => void refreshBreakerMetrics(), config.breakerMetricsIntervalMs ?? BREAKER_METRICS_INTERVAL_MS);
      breakerTimer.unref();
    },
    /** Stops taking messages, lets in-flight attempts finish within the grace period, then closes. */
    async stop() {
      clearInterval(breakerTimer);
      await webhookWorker?.close();
      if (worker) {
        const closing = worker.close();
        const timedOut = await Promise.race([closing.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), config.shutdownGraceMs).unref())]);
        if (timedOut) {
          logger.warn({ graceMs: config.shutdownGraceMs }, "in-flight attempts did not finish in time; their leases will expire and the reaper retries them");
          await worker.close(true);
        }
      }
      await completer.drain();
      leases.stop();
      await http.close();
    },
  };
}
