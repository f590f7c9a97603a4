import type pg from "pg";
import type { Queue } from "bullmq";
import { computeBackoffMs, dispatchChunkId, dispatchMessageId } from "@tick/core";
import { inTransaction, sql } from "@tick/db";
import type { FaultPoints, Logger } from "@tick/runtime";
import type { RateLimiter } from "../dispatch/rate-limiter.js";
import type { SchedulerMetrics } from "../metrics.js";

export interface OutboxRelayConfig {
  batch: number;
  /** First retry delay after a failed publish; doubles per try up to maxRetryDelayMs. */
  retryDelayMs: number;
  maxRetryDelayMs: number;
  /**
   * A publish that has not answered by then counts as failed (the rows are deferred, not marked). It
   * may still land later; the re-publish of the same attempt IDs is then a duplicate the broker drops.
   */
  publishTimeoutMs: number;
}

/** How the broker keeps every message Tick publishes (its job id makes a duplicate publish a no-op, S5). */
export const MESSAGE_OPTIONS = {
  attempts: 1, // retries are decided in Postgres, never by the broker
  removeOnComplete: { age: 3600 }, // kept an hour so a late re-publish of the same id stays a no-op
  removeOnFail: { age: 24 * 3600 },
} as const;

/**
 * Waits for a publish at most `timeoutMs`; past that it counts as failed (the caller retries or leaves it
 * to the reaper). It may still land later: a re-publish under the same IDs is then a duplicate the broker
 * drops, and a second copy of an attempt is discarded by the worker's start (S5).
 */
export async function publishWithin(publish: Promise<unknown>, timeoutMs: number): Promise<void> {
  publish.catch(() => {}); // a late failure after the timeout is already handled
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      publish,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`broker did not answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** How a row becomes a broker message: the BullMQ job id makes a duplicate publish a no-op (S5). */
function toMessage(row: sql.OutboxRow, messageId?: string) {
  // A webhook retry is a new message (its own try number); a re-publish of the same try is a duplicate.
  const { deliveryId, try: tryNumber } = row.payload; // written by the webhook SQL as {deliveryId: uuid, try: int}
  const jobId = messageId ?? (row.kind === "dispatch" ? row.attempt_id! : `wh-${typeof deliveryId === "string" ? deliveryId : row.id}-${typeof tryNumber === "number" ? tryNumber : 1}`);
  return {
    name: row.kind,
    data: row.payload,
    opts: { jobId, ...MESSAGE_OPTIONS },
  };
}

/** Broker states in which a message will still reach a worker (or is with one). */
const DELIVERABLE = new Set(["waiting", "prioritized", "delayed", "active", "waiting-children"]);
/** Most messages of one attempt looked up (re-publishes are rare: a few per attempt at most). */
const MAX_GENERATIONS = 16;

/**
 * Where an attempt no worker started stands in the broker, read from the broker itself (the outbox rows
 * that announced earlier messages may already be deleted): the ID of its newest message and whether that
 * message can still reach a worker (waiting, delayed, active). When it can, a re-publish goes out under
 * that ID, a no-op. When the broker lost every message (Redis flushed), under the attempt ID again. When
 * the newest one was consumed without starting the attempt (its worker could not reach Postgres, or died
 * after taking it and BullMQ gave up on it), under the next ID: the same ID would be a no-op for as long
 * as the broker keeps the finished message, and the attempt would wait that long.
 */
export async function dispatchMessageState(queue: Queue, attemptId: string, chunkId: string | null = null): Promise<{ republishAs: string; deliverable: boolean }> {
  // Claimed by a dispatch round (chunkId set), the attempt first went out in a chunk message: while that
  // can still be delivered, so can the attempt (a worker runs every attempt of a chunk it takes).
  if (chunkId !== null && DELIVERABLE.has(await queue.getJobState(dispatchChunkId(chunkId)))) {
    return { republishAs: dispatchMessageId(attemptId, 0), deliverable: true };
  }
  let newest: { id: string; generation: number; state: string } | null = null;
  for (let g = 0; g < MAX_GENERATIONS; g++) {
    const id = dispatchMessageId(attemptId, g);
    const state = await queue.getJobState(id);
    if (state === "unknown") break;
    newest = { id, generation: g, state };
  }
  if (!newest) return { republishAs: dispatchMessageId(attemptId, 0), deliverable: false };
  if (DELIVERABLE.has(newest.state)) return { republishAs: newest.id, deliverable: true };
  return { republishAs: dispatchMessageId(attemptId, newest.generation + 1), deliverable: false };
}

/**
 * Publishes outbox rows to BullMQ and only then marks them published (S4). Rows are locked with SKIP
 * LOCKED for the duration, so several relays can run at once without publishing a row twice in
 * parallel. While the broker is down nothing is marked published; rows are retried with backoff and
 * the backlog (and its age) is a metric (S10). The drain is rate limited.
 */
export class OutboxRelay {
  constructor(
    private readonly pool: pg.Pool,
    private readonly queues: Record<sql.OutboxRow["kind"], Queue>,
    private readonly config: OutboxRelayConfig,
    private readonly rate: RateLimiter,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
    private readonly faults: FaultPoints,
  ) {}

  /** Publishes one batch; returns how many rows were published. */
  async runOnce(): Promise<number> {
    const limit = Math.min(this.config.batch, this.rate.available());
    if (limit <= 0) return 0;
    // One transaction holds the rows (SKIP LOCKED) while they are published; inTransaction keeps a
    // connection reset during the publish from crashing the process.
    return inTransaction(this.pool, async (client) => {
      const rows = await sql.lockUnpublishedOutbox(client, limit);
      if (rows.length === 0) return 0;
      try {
        const publish = Promise.all(
          (["dispatch", "webhook"] as const).flatMap((kind) => {
            const batch = rows.filter((r) => r.kind === kind);
            if (batch.length === 0) return [];
            const queue = this.queues[kind];
            return Promise.all(
              batch.map(async (row) => {
                const republished = row.kind === "dispatch" && row.payload.republished === true;
                return toMessage(row, republished ? (await dispatchMessageState(queue, row.attempt_id!)).republishAs : undefined);
              }),
            ).then((messages) => queue.addBulk(messages));
          }),
        );
        await publishWithin(publish, this.config.publishTimeoutMs);
      } catch (err) {
        const tries = Math.max(...rows.map((r) => r.tries));
        // The rows' tries so far: the next is try tries + 1, whose delay doubles per try from retryDelayMs.
        const delay = computeBackoffMs({ strategy: "exponential", baseMs: this.config.retryDelayMs, maxMs: this.config.maxRetryDelayMs, jitter: "none" }, tries + 1, Math.random);
        await sql.deferOutbox(client, rows.map((r) => r.id), delay, (err as Error).message);
        this.metrics.publishFailures.inc();
        this.logger.warn({ err: (err as Error).message, rows: rows.length, retryInMs: delay }, "outbox publish failed; will retry");
        return 0;
      }
      this.faults.hit("relay.after-publish-before-mark");
      await sql.markOutboxPublished(client, rows.map((r) => r.id));
      this.rate.take(rows.length);
      for (const r of rows) this.metrics.published.inc({ kind: r.kind });
      return rows.length;
    });
  }

  async refreshBacklogMetrics(): Promise<{ count: number; oldestAgeMs: number }> {
    const backlog = await sql.outboxBacklog(this.pool);
    this.metrics.outboxBacklog.set(backlog.count);
    this.metrics.outboxLagSeconds.set(backlog.oldestAgeMs / 1000);
    return backlog;
  }
}
