import { createBreakers } from "@tick/breaker";
import { sql } from "@tick/db";
import { createDueIndex } from "@tick/due-index";
import { createSingleCreates, type CreateSingle, type JobServiceDeps } from "../services/jobs";
import { getContext } from "../context";
import { getEnv } from "../env";
import { createAdmission, failOpenRedis } from "./admission";
import { createAuthLimits, type AuthLimits } from "./auth-limits";
import { createApiKeyLookup, type ApiKeyLookup } from "./authenticate";
import type { AccountDeps } from "../services/accounts";
import type { InvitationMailer, MemberDeps } from "../services/members";
import type { WebhookDeps } from "../services/webhooks";
import type { OperatorDeps } from "../services/operators";
import type { TenantServiceDeps } from "../services/tenant-service-deps";
import type { PlatformStatusDeps } from "../services/platform-status";
import type { SessionDeps } from "../services/sessions";
import { createInvitationMailer, createMailer, type Mailer } from "../mailer";
import { tallyAdmission } from "../metrics";

let cached: JobServiceDeps | undefined;

/** What the job service needs, wired once from config. */
export function getJobDeps(): JobServiceDeps {
  if (!cached) {
    const env = getEnv();
    const { pool, redis, logger, metrics } = getContext();
    const dueIndex = createDueIndex({ redis, prefix: env.TICK_REDIS_PREFIX });
    const folding = new Set<string>();
    cached = {
      foldLiveJobCounts: (shard, tenantId) => {
        if (folding.has(tenantId)) return;
        folding.add(tenantId);
        sql
          .compactLiveJobCounts(pool, [shard], 1, tenantId)
          .catch((err: unknown) => logger.warn({ err, tenantId }, "could not fold the tenant's live-job counts (the scheduler folds them too)"))
          .finally(() => folding.delete(tenantId));
      },
      noteDue: (shard, tenantId, dueAtMs) => dueIndex.noteDue(shard, tenantId, dueAtMs),
      onOutcomes: (tenantId, outcomes) => metrics.admission(tenantId, tallyAdmission(outcomes)),
      pool,
      admit: createAdmission({ redis, prefix: env.TICK_REDIS_PREFIX, timeoutMs: env.API_RATE_LIMIT_TIMEOUT, logger, onFailOpen: () => metrics.admissionFailedOpen() }),
      allowedCidrs: env.TICK_SSRF_ALLOWED_CIDRS,
      idempotencyTtlMs: env.TICK_IDEMPOTENCY_TTL,
    };
  }
  return cached;
}

let apiKeyLookup: ApiKeyLookup | undefined;

/** API key lookups of concurrent requests, one statement at a time (authenticate.ts createApiKeyLookup). */
export function getApiKeyLookup(): ApiKeyLookup {
  return (apiKeyLookup ??= createApiKeyLookup(getContext().pool));
}

let singleCreates: CreateSingle | undefined;

/** POST /jobs: one tenant's concurrent creates share a transaction (services/jobs.ts createSingleCreates). */
export function getSingleCreates(): CreateSingle {
  return (singleCreates ??= createSingleCreates(getJobDeps()));
}

let authLimits: AuthLimits | undefined;

/** Sign-up and sign-in limits per client address and per email (TICK_AUTH_RATE_*). */
export function getAuthLimits(): AuthLimits {
  if (!authLimits) {
    const env = getEnv();
    const { redis, logger } = getContext();
    authLimits = createAuthLimits({
      redis,
      prefix: env.TICK_REDIS_PREFIX,
      logger,
      policy: {
        perAddress: env.TICK_AUTH_RATE_PER_ADDRESS,
        perEmail: env.TICK_AUTH_RATE_PER_EMAIL,
        windowMs: env.TICK_AUTH_RATE_WINDOW,
        knownAddressTtlMs: env.TICK_AUTH_KNOWN_ADDRESS_TTL,
      },
    });
  }
  return authLimits;
}

let sharedMailer: Mailer | null | undefined;

/** The one mail transport (TICK_MAIL_DIR, else SMTP_URL, else none), shared by sign-up and invitations. */
function getMailer(): Mailer | null {
  if (sharedMailer === undefined) {
    const env = getEnv();
    sharedMailer = createMailer({ smtpUrl: env.SMTP_URL, mailDir: env.TICK_MAIL_DIR, from: env.SMTP_FROM });
  }
  return sharedMailer;
}

/** What the account services (sign-up, members, operators) need. */
export function getAccountDeps(): AccountDeps {
  const env = getEnv();
  const { prisma, logger } = getContext();
  return {
    prisma,
    limits: getAuthLimits(),
    signUpMode: env.TICK_SIGNUP,
    shardCount: env.TICK_SHARDS,
    publicUrl: env.NEXTAUTH_URL,
    signUpTtlMs: env.TICK_SIGNUP_TTL,
    mailer: getMailer(),
    logger,
  };
}

let mailer: InvitationMailer | undefined;

/** What the member services (invitations, roles, removal) need. */
export function getMemberDeps(): MemberDeps {
  const env = getEnv();
  const { prisma, pool, logger } = getContext();
  const transport = getMailer();
  mailer ??= transport ? createInvitationMailer(transport) : null;
  return {
    prisma,
    pool,
    limits: getAuthLimits(),
    signUpMode: env.TICK_SIGNUP,
    publicUrl: env.NEXTAUTH_URL,
    invitationTtlMs: env.TICK_INVITATION_TTL,
    mailer,
    logger,
  };
}

/** What the platform operator services need. */
export function getOperatorDeps(): OperatorDeps {
  return { prisma: getContext().prisma };
}

/** What the webhook services need. */
export function getWebhookDeps(): WebhookDeps {
  return { pool: getContext().pool, allowedCidrs: getEnv().TICK_SSRF_ALLOWED_CIDRS };
}

let tenantServiceDeps: TenantServiceDeps | undefined;

/** The tenant services' one deps object (services/tenant-service-deps.ts), wired once from config. */
export function getTenantServiceDeps(): TenantServiceDeps {
  if (!tenantServiceDeps) {
    const env = getEnv();
    const { prisma, pool, redis, logger } = getContext();
    // Breaker state is shown, never decided on here: a Redis that does not answer leaves it unknown (null).
    const breakers = createBreakers({ redis, prefix: env.TICK_REDIS_PREFIX });
    const ask = failOpenRedis(logger, env.API_RATE_LIMIT_TIMEOUT, "breaker state");
    tenantServiceDeps = {
      prisma,
      pool,
      logger,
      allowedCidrs: env.TICK_SSRF_ALLOWED_CIDRS,
      retentionMaxDays: env.TICK_RETENTION_MAX_DAYS,
      readBreakers: (tenantId, keys) => ask(breakers.inspect(tenantId, keys)),
    };
  }
  return tenantServiceDeps;
}

let platformStatusDeps: PlatformStatusDeps | undefined;

/** What the operator status page's service needs. */
export function getPlatformStatusDeps(): PlatformStatusDeps {
  if (!platformStatusDeps) {
    const env = getEnv();
    const { pool, redis, logger } = getContext();
    const breakers = createBreakers({ redis, prefix: env.TICK_REDIS_PREFIX });
    const ask = failOpenRedis(logger, env.API_RATE_LIMIT_TIMEOUT, "open breakers for the status page");
    platformStatusDeps = { pool, shardCount: env.TICK_SHARDS, openBreakers: () => ask(breakers.openDependencies()), readyzTimeoutMs: 1_000 };
  }
  return platformStatusDeps;
}

let sessionDeps: SessionDeps | undefined;

/** What the console sessions need (sign-in, every request's session check, the account routes): TICK_SESSION_*. */
export function getSessionDeps(): SessionDeps {
  if (!sessionDeps) {
    const env = getEnv();
    const { prisma, logger } = getContext();
    sessionDeps = { prisma, logger, maxAgeMs: env.TICK_SESSION_MAX_AGE, idleTimeoutMs: env.TICK_SESSION_IDLE_TIMEOUT, now: Date.now };
  }
  return sessionDeps;
}
