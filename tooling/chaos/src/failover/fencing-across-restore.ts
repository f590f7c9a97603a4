import type { Delivery } from "../sink.js";

export interface FencingVerdict {
  /** Requests that named a fencing token (every job's request does). */
  checked: number;
  /** A (job, token) the target saw for two different attempts: the token was handed out twice. */
  reused: string[];
  /** A request after the restore whose token was not above every token the target had seen for that job before it. */
  backwards: string[];
}

/**
 * What a target that keeps fencing tokens would refuse across a restore from a backup, judged from the requests it
 * received: requests that arrived before `restoredAt` came from the timeline that was lost, the rest from the
 * restored database. A token handed out to two different attempts of one job is a reuse, whenever it happened;
 * after the restore, every token must be above every token of the same job seen before it (also for an attempt
 * that was in flight at the restore point and is sent again).
 */
export function fencingAcrossRestore(deliveries: readonly Delivery[], restoredAt: number): FencingVerdict {
  const attemptsOfToken = new Map<string, Set<string>>();
  const highestBefore = new Map<string, number>();
  const checked = deliveries.filter((d) => d.jobId && d.fencingToken > 0);
  for (const d of checked) {
    const id = `${d.jobId}#${d.fencingToken}`;
    attemptsOfToken.set(id, (attemptsOfToken.get(id) ?? new Set()).add(d.attemptId));
    if (d.receivedAt < restoredAt) highestBefore.set(d.jobId, Math.max(highestBefore.get(d.jobId) ?? 0, d.fencingToken));
  }
  const reused = [...attemptsOfToken].filter(([, attempts]) => attempts.size > 1).map(([id, attempts]) => {
    const [job, token] = id.split("#");
    return `job ${job}: fencing token ${token} for ${attempts.size} attempts (${[...attempts].join(", ")})`;
  });
  const backwards: string[] = [];
  for (const d of checked) {
    const before = highestBefore.get(d.jobId);
    if (d.receivedAt >= restoredAt && before !== undefined && d.fencingToken <= before) {
      backwards.push(`job ${d.jobId}: attempt ${d.attemptId} sent token ${d.fencingToken} after the restore; ${before} was seen before it`);
    }
  }
  return { checked: checked.length, reused, backwards };
}
