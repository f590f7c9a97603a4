import { z } from "zod";

/**
 * What a dispatch message carries. The BullMQ job id is the attempt ID, so a re-publish of the same
 * attempt is a duplicate the broker ignores (S5); the worker runs it only if the job is still
 * dispatched at this version with this attempt pending (S15).
 */
export const attemptMessageSchema = z.object({
  jobId: z.uuid(),
  attemptId: z.uuid(),
  tenantId: z.uuid(),
  version: z.number().int(),
  fencingToken: z.string(),
  shard: z.number().int(),
  epoch: z.string(),
  republished: z.boolean().optional(),
  /** Written by older schedulers' re-publishes (a message still in flight may carry it); not read. */
  generation: z.number().int().nonnegative().optional(),
  /** Circuit-breaker key (the job's dependency_key). */
  dependency: z.string().nullable().optional(),
  /** Attempts started before this one: > 0 makes this a retry (retry budget). */
  attemptCount: z.number().int().optional(),
  /**
   * The dispatcher's fair rank: the attempt's place among its tenant's unstarted attempts of the
   * shard, divided by the tenant's weight. A worker serves the attempts it holds lowest rank first, so a
   * quiet tenant's attempt does not wait behind a noisy tenant's backlog. Absent: 0.
   */
  rank: z.number().int().nonnegative().optional(),
});

export type AttemptMessage = z.output<typeof attemptMessageSchema>;

/**
 * A dispatch message that carries several attempts: the attempts a dispatch round claimed go to the
 * broker as one message per chunk, so the broker's cost (about 30 Redis commands a message) is paid per
 * chunk, not per job. Its ID is `dispatchChunkId(...)`, recorded on each attempt (`attempts.message_id`),
 * so the reaper can ask the broker about it. Each attempt is still started, fenced and completed on its
 * own; a re-publish is a message of one attempt.
 */
export const attemptChunkMessageSchema = z.object({
  attempts: z.array(attemptMessageSchema).min(1),
  /**
   * The W3C traceparent of the dispatch round's span, when the scheduler traces: each attempt's span
   * links to it. The job's own trace is not here: the worker reads it from the job row its start returns.
   */
  traceparent: z.string().optional(),
});

export type AttemptChunkMessage = z.output<typeof attemptChunkMessageSchema>;

/** The attempts a dispatch message carries: a chunk's, or the one of a single-attempt message. */
export function attemptsOfMessage(data: unknown): unknown[] {
  if (typeof data === "object" && data !== null && Array.isArray((data as { attempts?: unknown }).attempts)) {
    return (data as { attempts: unknown[] }).attempts;
  }
  return [data];
}

/** The broker message ID of a chunk (`attempts.message_id`); never equal to an attempt's own message ID. */
export function dispatchChunkId(messageId: string): string {
  return `c-${messageId}`;
}

/** The broker message ID of an attempt's n-th dispatch message (0: the first, which is the attempt ID). */
export function dispatchMessageId(attemptId: string, generation: number): string {
  return generation === 0 ? attemptId : `${attemptId}-r${generation}`;
}
