import { pingDatabase } from "@tick/db";
import { runReadinessChecks } from "@tick/runtime";
import { getContext } from "./context";

/** Readiness of the console: the database and Redis answer in time. Returns the failing checks. */
export function checkReadiness(timeoutMs = 2000): Promise<Record<string, string>> {
  const { pool, redis } = getContext();
  return runReadinessChecks(
    { database: () => pingDatabase(pool), redis: async () => void (await redis.ping()) },
    timeoutMs,
  );
}
