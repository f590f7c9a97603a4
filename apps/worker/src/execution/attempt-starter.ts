import type pg from "pg";
import { sql } from "@tick/db";
import { createBatchQueue, type Logger } from "@tick/runtime";

interface BatchedStart {
  started: sql.StartedAttempt;
  /** When the statement that granted the lease was sent (performance.now()): the lease began no earlier. */
  sentAt: number;
}

export interface AttemptStarter {
  /** The attempt started in a batch, or null: take it through the single path (sql.startAttempt). */
  start(msg: { attemptId: string; jobId: string; version: number }): Promise<BatchedStart | null>;
  drain(): Promise<void>;
}

/**
 * Batches the starts of a worker's concurrent attempts into one statement (sql.startAttempts). Only the
 * common case starts here; a replayed job (its start gate), a stale, cancelled or duplicate message, and
 * every row of a batch that failed come back null and take the single path, which decides and explains.
 */
export function createAttemptStarter(options: {
  pool: pg.Pool;
  logger: Logger;
  workerId: string;
  leaseMs: number;
  lingerMs?: number;
  maxBatch: number;
  /** Told of each attempt the batch started (the scheduling-lag metric); must be cheap: it runs per attempt. */
  onStarted?: (started: sql.StartedAttempt) => void;
}): AttemptStarter {
  const { pool, logger } = options;
  const queue = createBatchQueue({
    lingerMs: options.lingerMs,
    maxBatch: options.maxBatch,
    runBatch: async (rows: { attemptId: string; jobId: string; version: number }[]) => {
      const sentAt = performance.now();
      const started = await sql.startAttempts(pool, rows, { workerId: options.workerId, leaseMs: options.leaseMs });
      // A message delivered twice into one batch started once: only its first row may run it; the other
      // takes the single path, which finds the attempt no longer pending (a duplicate).
      const given = new Set<string>();
      return rows.map((r) => {
        const s = started.get(r.attemptId);
        if (!s || given.has(r.attemptId)) return null;
        given.add(r.attemptId);
        options.onStarted?.(s);
        return { started: s, sentAt };
      });
    },
    runOne: async () => null,
    onBatchError: (err, size) => logger.warn({ err: (err as Error).message, size }, "start batch failed; starting its attempts one by one"),
  });
  return { start: (msg) => queue.submit(msg), drain: () => queue.drain() };
}
