import type { Job, Waiting } from "@tick/contract";
import { consoleApi, ok } from "./ui";

/** A job as GET /jobs/{id} answers it: with its attempts and why it waits. */
export type JobWithAttempts = Job & { waiting?: Waiting | null; attempts: { id: string; number: number; status: string; fencingToken: string; workerId: string | null; dispatchedAt: string; startedAt: string | null; finishedAt: string | null; leaseExpiresAt: string | null; outcome: string | null; httpStatus: number | null; error: unknown; durationMs: number | null }[] };

/**
 * One job's query (GET /jobs/{id}): its page and the jobs list's waiting rows share it, so both read and fill the
 * same cache entry (opening a listed job is instant). Each caller adds its own polling.
 */
export const jobQuery = (id: string) => ({
  queryKey: ["job", id],
  queryFn: async () => (await ok(consoleApi().call("getJob", { params: { id } }))) as JobWithAttempts,
});
