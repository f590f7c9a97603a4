import { pingDatabase } from "@tick/db";
import { runReadinessChecks, type ReadinessCheck } from "@tick/runtime";
import { getContext } from "./context";

/** What the console needs to serve: the database and Redis answer. */
export function readinessChecks(): Record<string, ReadinessCheck> {
  const { pool, redis } = getContext();
  return { database: () => pingDatabase(pool), redis: async () => void (await redis.ping()) };
}

/** Readiness of the console: the database and Redis answer in time. Returns the failing checks. */
export function checkReadiness(timeoutMs = 2000): Promise<Record<string, string>> {
  return runReadinessChecks(readinessChecks(), timeoutMs);
}
