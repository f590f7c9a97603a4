import { isIP } from "node:net";
import os from "node:os";
import { z } from "zod";
import { durationSchema, parseCidrList } from "@tick/core";
import { DEFAULT_METRIC_LABELS, type MetricLabelConfig } from "./bounded-labels.js";
import type { SentinelAddress } from "./stores.js";
import { tracingEnvShape } from "./tracing.js";

/** Thrown when the environment does not satisfy an app's schema; the message names every bad variable. */
export class EnvError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(
      "Invalid configuration:\n" +
        problems.map((p) => `  - ${p.variable}: ${p.message}`).join("\n") +
        "\nSee the configuration table in README.md.",
    );
    this.name = "EnvError";
  }
}

/**
 * Parses the environment once, at an app's composition root. Only that root passes `process.env`;
 * everything below it receives typed config.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  // Empty strings count as unset, so `FOO= npm start` behaves like leaving FOO out.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  throw new EnvError(
    result.error.issues.map((issue) => ({
      variable: issue.path.length ? issue.path.join(".") : "(environment)",
      // zod 4 leaves `issue.input` out, so whether the variable was set is read from the env itself.
      message: issue.code === "invalid_type" && !(String(issue.path[0]) in cleaned) ? "is required but not set" : issue.message,
    })),
  );
}

const urlWithProtocols = (protocols: string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

export const postgresUrl = urlWithProtocols(["postgres:", "postgresql:"], "postgresql://user@host:5432/db");
export const redisUrl = urlWithProtocols(["redis:", "rediss:"], "redis://127.0.0.1:6379");
export const port = z.coerce.number().int().min(0).max(65535);
export const positiveInt = z.coerce.number().int().positive();
/** A process's identity in leases and logs (SCHEDULER_ID, WORKER_ID): host:pid unless set. */
export const processId = z.string().min(1).default(`${os.hostname()}:${process.pid}`);
export const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/** An address to listen on: an IP literal (0.0.0.0 or :: for every interface) or a host name. */
/** An IP literal or a host name. */
const isHost = (value: string) => isIP(value) !== 0 || z.hostname().safeParse(value).success;

export const bindHost = z.string().refine(isHost, {
  message: "must be an IP address (127.0.0.1, 0.0.0.0, ::) or a host name",
});

/** A comma-separated list of CIDR ranges (e.g. TICK_SSRF_ALLOWED_CIDRS), parsed into ranges. */
export const cidrList = z
  .string()
  .default("")
  .transform((text, ctx) => {
    try {
      return parseCidrList(text);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
      return z.NEVER;
    }
  });

/** Redis Sentinel addresses (REDIS_SENTINELS): `host:port` pairs separated by commas. */
export const sentinelList = z.string().transform((text, ctx) => {
  const sentinels: SentinelAddress[] = [];
  for (const item of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    // host:port, or [v6]:port
    const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(item);
    const port = match ? Number(match[3]) : 0;
    const host = match ? (match[1] ?? match[2])! : "";
    if (!match || port < 1 || port > 65535 || !isHost(host)) {
      ctx.addIssue({ code: "custom", message: `"${item}" is not host:port (e.g. 10.0.0.5:26379,10.0.0.6:26379)` });
      return z.NEVER;
    }
    sentinels.push({ host, port });
  }
  if (sentinels.length === 0) {
    ctx.addIssue({ code: "custom", message: "lists no sentinel (host:port, comma-separated)" });
    return z.NEVER;
  }
  return sentinels;
});

/** Variables every process shares. */
export const baseEnvShape = {
  DATABASE_URL: postgresUrl,
  /**
   * The Redis server. With REDIS_SENTINELS set, its host and port are not used: the primary is asked of the
   * sentinels; its user, password, database number and scheme (rediss: TLS) still apply to the data nodes.
   */
  REDIS_URL: redisUrl,
  /** Redis Sentinel: the sentinels to ask for the current primary (`host:port,host:port,...`); unset: REDIS_URL is the server. */
  REDIS_SENTINELS: sentinelList.optional(),
  /** The name the sentinels monitor the primary under (`sentinel monitor <name> ...`). */
  REDIS_SENTINEL_MASTER: z.string().min(1).default("mymaster"),
  /** The sentinels' own password (`requirepass` on the sentinels), if they have one. */
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  LOG_LEVEL: logLevel.default("info"),
  /** Region this process runs in (shard leases record it; see docs/architecture.md). */
  TICK_REGION: z.string().min(1).default("local"),
  /** Prefix for every Redis key this deployment writes, so deployments and tests can share a Redis. */
  TICK_REDIS_PREFIX: z.string().min(1).default("tick"),
  /**
   * Where this process listens: the console (`npm start` passes it to `next start -H`) and the scheduler's
   * and worker's health servers. Loopback unless set; 0.0.0.0 exposes them on every interface.
   */
  TICK_BIND_HOST: bindHost.default("127.0.0.1"),
};

/** Variables the long-running services (scheduler, worker) add to the shared ones. */
export const serviceEnvShape = {
  /** Test only: fault points to enable (see fault-points.ts). */
  TICK_FAULT_POINTS: z.string().optional(),
  /** Test only: shifts this process's clock by this many ms, as a drifted host's (clock-skew.ts; chaos S13). */
  TICK_TEST_CLOCK_SKEW_MS: z.coerce.number().int().default(0),
  /** OpenTelemetry traces over OTLP (tracing.ts): off unless an endpoint is set. */
  ...tracingEnvShape,
};

/** A comma-separated list of label values (TICK_METRICS_TENANTS, TICK_METRICS_DEPENDENCIES). */
const labelList = (item: z.ZodType<string>, what: string) =>
  z
    .string()
    .default("")
    .transform((text, ctx) => {
      const values = text.split(",").map((v) => v.trim()).filter(Boolean);
      for (const value of values) {
        if (!item.safeParse(value).success) ctx.addIssue({ code: "custom", message: `"${value}" is not ${what}` });
      }
      return values;
    });

/**
 * Bounded metric labels (docs/observability.md): which tenants and dependencies get series of their own;
 * the rest are summed under "other". Each process that exports per-tenant metrics spreads these in.
 */
export const metricsEnvShape = {
  /** Tenant IDs always labelled in metrics, comma-separated. */
  TICK_METRICS_TENANTS: labelList(z.uuid(), "a tenant ID (a UUID)"),
  /** How many more tenants, the busiest, get their own series. */
  TICK_METRICS_TOP_TENANTS: z.coerce.number().int().min(0).max(1_000).default(DEFAULT_METRIC_LABELS.topTenants),
  /** How many (tenant, queue) pairs, the busiest of labelled tenants, get their queue's name. */
  TICK_METRICS_TOP_QUEUES: z.coerce.number().int().min(0).max(5_000).default(DEFAULT_METRIC_LABELS.topQueues),
  /** Dependencies (a job's dependency key, by default its URL's host) always labelled, comma-separated. */
  TICK_METRICS_DEPENDENCIES: labelList(z.string().min(1).max(200), "a dependency key"),
  /** How many more dependencies, the busiest, get their own series. */
  TICK_METRICS_TOP_DEPENDENCIES: z.coerce.number().int().min(0).max(1_000).default(DEFAULT_METRIC_LABELS.topDependencies),
  /** How often the store probe reads the database clock and pings Redis (tick_clock_offset_seconds, tick_store_up). */
  TICK_STORE_PROBE_INTERVAL: durationSchema.default(15_000),
};

/** The label bounds of a parsed env that spread metricsEnvShape in. */
export function metricLabelConfig(env: {
  TICK_METRICS_TENANTS: string[];
  TICK_METRICS_TOP_TENANTS: number;
  TICK_METRICS_TOP_QUEUES: number;
  TICK_METRICS_DEPENDENCIES: string[];
  TICK_METRICS_TOP_DEPENDENCIES: number;
}): MetricLabelConfig {
  return {
    tenants: env.TICK_METRICS_TENANTS,
    topTenants: env.TICK_METRICS_TOP_TENANTS,
    topQueues: env.TICK_METRICS_TOP_QUEUES,
    dependencies: env.TICK_METRICS_DEPENDENCIES,
    topDependencies: env.TICK_METRICS_TOP_DEPENDENCIES,
  };
}
