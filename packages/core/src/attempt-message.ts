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
  /** Written by re-publishes before #18 (messages still in flight may carry it); no longer read. */
  generation: z.number().int().nonnegative().optional(),
  /** Circuit-breaker key (the job's dependency_key). */
  dependency: z.string().nullable().optional(),
  /** Attempts started before this one: > 0 makes this a retry (retry budget). */
  attemptCount: z.number().int().optional(),
});

export type AttemptMessage = z.output<typeof attemptMessageSchema>;

/** The broker message ID of an attempt's n-th dispatch message (0: the first, which is the attempt ID). */
export function dispatchMessageId(attemptId: string, generation: number): string {
  return generation === 0 ? attemptId : `${attemptId}-r${generation}`;
}
