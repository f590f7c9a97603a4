import { createDueIndex } from "@tick/due-index";
import type { JobServiceDeps } from "../services/jobs";
import { getContext } from "../context";
import { getEnv } from "../env";
import { createAdmission } from "./admission";

let cached: JobServiceDeps | undefined;

/** What the job service needs, wired once from config. */
export function getJobDeps(): JobServiceDeps {
  if (!cached) {
    const env = getEnv();
    const { pool, redis, logger } = getContext();
    const dueIndex = createDueIndex({ redis, prefix: env.TICK_REDIS_PREFIX });
    cached = {
      noteDue: (shard, tenantId, dueAtMs) => dueIndex.noteDue(shard, tenantId, dueAtMs),
      pool,
      admit: createAdmission({ redis, prefix: env.TICK_REDIS_PREFIX, timeoutMs: env.API_RATE_LIMIT_TIMEOUT, logger }),
      allowedCidrs: env.TICK_SSRF_ALLOWED_CIDRS,
      idempotencyTtlMs: env.TICK_IDEMPOTENCY_TTL,
    };
  }
  return cached;
}
