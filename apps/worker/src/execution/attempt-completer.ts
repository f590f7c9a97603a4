import type pg from "pg";
import { sql } from "@tick/db";
import { createBatchQueue, type Logger } from "@tick/runtime";

export interface AttemptCompleterOptions {
  pool: pg.Pool;
  logger: Logger;
  /** How long the first completion of a batch waits for others when none is in flight (default 0). */
  lingerMs?: number;
  maxBatch: number;
  /** Tries of a single completion after its batch failed. */
  retries?: number;
}

export interface AttemptCompleter {
  /** Resolves once the completion has committed (or lost its fence): never before. */
  complete(args: sql.CompleteAttemptArgs): Promise<sql.CompletionResult>;
  drain(): Promise<void>;
}

/**
 * Batches the completions of a worker's concurrent attempts into one statement
 * (sql.completeAttempts), each row under its own fence. A failed batch (one row's data makes the
 * statement fail, the connection is cut) is retried row by row: first asking whether the row's completion
 * committed anyway (a commit whose outcome was unknown), then as a batch of one, a few times.
 * A worker killed with a batch waiting loses nothing the reaper does not recover: those attempts stay
 * running until their leases expire.
 */
export function createAttemptCompleter(options: AttemptCompleterOptions): AttemptCompleter {
  const { pool, logger } = options;
  const retries = options.retries ?? 3;
  const one = async (args: sql.CompleteAttemptArgs): Promise<sql.CompletionResult> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const committed = await sql.committedCompletion(pool, args.attemptId, args.jobId);
        if (committed) return committed;
        return (await sql.completeAttempts(pool, [args]))[0]!;
      } catch (err) {
        if (attempt >= retries) throw err;
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }
  };
  const queue = createBatchQueue({
    lingerMs: options.lingerMs,
    maxBatch: options.maxBatch,
    runBatch: (rows: sql.CompleteAttemptArgs[]) => sql.completeAttempts(pool, rows),
    runOne: one,
    onBatchError: (err, size) => logger.warn({ err: (err as Error).message, size }, "completion batch failed; completing its attempts one by one"),
  });
  return { complete: (args) => queue.submit(args), drain: () => queue.drain() };
}
