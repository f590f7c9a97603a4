import { z } from "zod";
import { durationSchema } from "@tick/core";
import { baseEnvShape, cidrList, metricsEnvShape, parseEnv, port, tracingEnvShape } from "@tick/runtime";

export const consoleEnvSchema = z.object({
  ...baseEnvShape,
  ...metricsEnvShape,
  /** OpenTelemetry traces over OTLP (docs/observability.md, "Traces"): off unless an endpoint is set. */
  ...tracingEnvShape,
  /**
   * Port of the console's side server (on TICK_BIND_HOST): /metrics (Prometheus), /healthz and /readyz,
   * kept off the public HTTP port.
   */
  CONSOLE_METRICS_PORT: port.default(9466),
  /** Signs console session cookies; at least 32 characters. */
  NEXTAUTH_SECRET: z.string().min(32, "must be at least 32 characters"),
  /** The console's public URL, e.g. http://127.0.0.1:3000. */
  NEXTAUTH_URL: z.url(),
  /** Number of scheduler shards tenants are spread over (must match the schedulers'). */
  TICK_SHARDS: z.coerce.number().int().positive().max(4096).default(16),
  /**
   * Address ranges tenants' job targets and callbacks may use although they are not public (loopback,
   * private, link-local). Empty by default: only public addresses. The local demo sets 127.0.0.0/8,::1/128.
   */
  TICK_SSRF_ALLOWED_CIDRS: cidrList,
  /** How long an Idempotency-Key is held after the job it created (at least this long). */
  TICK_IDEMPOTENCY_TTL: durationSchema.default(24 * 3_600_000),
  /** Ceiling on any tenant's retention in days (as the schedulers' TICK_RETENTION_MAX_DAYS). */
  TICK_RETENTION_MAX_DAYS: z.coerce.number().int().positive().max(3650).default(90),
  /** Largest request body accepted by single-object endpoints. */
  API_MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  /** Largest request body accepted by POST /jobs/batch (up to 1,000 jobs). */
  API_MAX_BATCH_BODY_BYTES: z.coerce.number().int().min(1024).max(256 * 1024 * 1024).default(16 * 1024 * 1024),
  /**
   * Who may sign up: `open` (anyone creates a tenant), `invite` (people join by invitation
   * only), `closed` (neither). Unset is closed, so a deployment never opens sign-up by accident;
   * `npm start` sets open.
   */
  TICK_SIGNUP: z.enum(["open", "invite", "closed"]).default("closed"),
  /** Sign-ups, and sign-in attempts, one client address may make per TICK_AUTH_RATE_WINDOW. */
  TICK_AUTH_RATE_PER_ADDRESS: z.coerce.number().int().positive().default(100),
  /** Sign-ups, and failed sign-ins, per email per TICK_AUTH_RATE_WINDOW. */
  TICK_AUTH_RATE_PER_EMAIL: z.coerce.number().int().positive().default(10),
  TICK_AUTH_RATE_WINDOW: durationSchema.default(15 * 60_000),
  /**
   * How long a successful sign-in makes its (email, client address) pair known: attempts from a known
   * address are limited by their own failure count, not the email's, so strangers guessing from
   * elsewhere do not lock the owner out (auth-limits.ts). 0: no address is ever known.
   */
  TICK_AUTH_KNOWN_ADDRESS_TTL: durationSchema.default(30 * 24 * 3_600_000),
  /**
   * Proxies in front of the console that append the address they see to X-Forwarded-For. 0 (the
   * default): the header is ignored and the client address is the connection's; N: the Nth entry from
   * the right (client-address.ts). Set it to the number of such hops, never more.
   */
  TICK_TRUSTED_PROXIES: z.coerce.number().int().min(0).max(16).default(0),
  /**
   * Platform operators by config: comma-separated emails of accounts that may list, limit, suspend and
   * resume tenants (besides those made operators with `npm run tick -- operator add <email>`).
   */
  TICK_OPERATOR_EMAILS: z
    .string()
    .default("")
    .transform((s) => s.split(",").map((e) => e.trim().toLowerCase()).filter(Boolean)),
  /** How long an invitation link stays valid. */
  TICK_INVITATION_TTL: durationSchema.default(7 * 24 * 3_600_000),
  /**
   * A console sign-in's absolute lifetime, whatever its activity (the server-side session row's end, and the
   * session cookie's max age). Sign-out, "sign out everywhere" and a password change end sessions earlier.
   */
  TICK_SESSION_MAX_AGE: durationSchema.refine((ms) => ms >= 1_000, "must be at least 1s").default(8 * 3_600_000),
  /** A console session that makes no request for this long is ended (its last request is recorded to within a minute). */
  TICK_SESSION_IDLE_TIMEOUT: durationSchema.refine((ms) => ms >= 1_000, "must be at least 1s").default(2 * 3_600_000),
  /** How long a sign-up confirmation link stays valid. */
  TICK_SIGNUP_TTL: durationSchema.default(24 * 3_600_000),
  /**
   * Mail server for invitation links and sign-up confirmations (smtp://user:pass@host:587 or smtps://…).
   * Neither this nor TICK_MAIL_DIR: invitation links are only shown to the inviter.
   */
  SMTP_URL: z.string().regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL").optional(),
  /**
   * A directory every mail is written to (one JSON file each: from, to, subject, text, date) instead of being
   * sent; it takes precedence over SMTP_URL. For local runs and tests (`npm start` sets <its data dir>/mail).
   */
  TICK_MAIL_DIR: z.string().optional(),
  /** Sender of invitation and sign-up emails. */
  SMTP_FROM: z.string().default("Tick <no-reply@tick.local>"),
  /** How long an admission check may wait for Redis before the request is let through (fail open). */
  API_RATE_LIMIT_TIMEOUT: durationSchema.default(250),
  /**
   * Next's switch that leaves SIGTERM/SIGINT to the app (npm start and the `start` script set it): the
   * console then drains and exits 0 (server/shutdown.ts) instead of Next's 130/143.
   */
  NEXT_MANUAL_SIG_HANDLE: z.string().optional(),
  /** Set by Next (`next dev`: development): the page CSP then allows what dev tooling needs (src/proxy.ts). */
  NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
}).superRefine((env, ctx) => {
  // Open sign-up confirms the email by a mailed link: without a way to mail it nobody could finish.
  if (env.TICK_SIGNUP === "open" && !env.SMTP_URL && !env.TICK_MAIL_DIR) {
    ctx.addIssue({
      code: "custom",
      path: ["TICK_SIGNUP"],
      message: "is open, but sign-up mails a confirmation link and there is nowhere to send it: set SMTP_URL (a mail server) or TICK_MAIL_DIR (a directory mails are written to)",
    });
  }
});

export type ConsoleEnv = z.output<typeof consoleEnvSchema>;

let cached: ConsoleEnv | undefined;

/**
 * The console's config, parsed once. Next has no single main(), so instrumentation.ts calls this at
 * start-up (a bad variable stops the server with a message naming it) and server code reads it here.
 */
export function getEnv(): ConsoleEnv {
  // eslint-disable-next-line no-restricted-properties -- the console's one reader of process.env
  cached ??= parseEnv(consoleEnvSchema, process.env);
  return cached;
}
