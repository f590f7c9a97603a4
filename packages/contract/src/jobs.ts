import { z } from "zod";
import { backoffPolicySchema, idempotencyKeySchema, JOB_STATES } from "@tick/core";
import { flowKeySchema, waitingSchema } from "./flow-keys.js";
import { httpUrlSchema, nullableTimestamp, page, pageQuery, problemSchema, timestamp, uuid } from "./common.js";

/** The job states of the state machine in @tick/core, as the API names them. */
export const JOB_STATUSES = JOB_STATES;
export const jobStatusSchema = z.enum(JOB_STATUSES);

/** Header names a tenant may not set on its own request: they belong to the transport or to Tick. */
// traceparent and tracestate carry the job's trace: send them on the create request instead.
const RESERVED_HEADER = /^(host|content-length|transfer-encoding|connection|keep-alive|upgrade|te|trailer|proxy-.*|idempotency-key|tick-.*|traceparent|tracestate)$/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// RFC 9110 field-value characters as the worker's HTTP client sends them (one byte each): tab, space,
// visible ASCII, U+0080-U+00FF. Anything else (a line break, another control character, DEL, a character
// above U+00FF) would make every attempt fail when the request is built.
const HEADER_VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/;

export const backoffSchema = backoffPolicySchema.meta({
  id: "Backoff",
  description: "Retry delay policy: exponential (baseMs * 2^(n-1), capped at maxMs) or fixed, with full jitter by default.",
});

export const httpTargetSchema = z
  .strictObject({
    method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).default("POST"),
    url: httpUrlSchema.meta({ description: "http(s) URL without control characters; private, loopback and link-local addresses are refused" }),
    headers: z
      .record(
        z.string().regex(HEADER_NAME, "invalid header name").refine((h) => !RESERVED_HEADER.test(h), "this header is set by Tick"),
        z
          .string()
          .max(8192)
          .regex(HEADER_VALUE, "header values may not contain line breaks or other control characters, nor characters above U+00FF"),
      )
      .refine((h) => Object.keys(h).length <= 50, "at most 50 headers")
      .default({}),
    body: z.string().max(262_144).nullable().optional().meta({ description: "Request body, at most 256 KiB" }),
    timeoutMs: z.number().int().min(100).max(300_000).optional().meta({ description: "Defaults to the queue's default timeout" }),
  })
  .meta({ id: "HttpTarget" });

export const debounceSchema = z
  .strictObject({
    key: z.string().min(1).max(255).meta({ description: "Creates of this queue with the same debounce key fold into one job" }),
    periodMs: z.number().int().min(1).max(86_400_000).meta({ description: "The window: trailing moves the job's due time to now + periodMs on every create" }),
    maxWaitMs: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400_000)
      .optional()
      .meta({ description: "Trailing: the job runs at most this long after the window's first create, however many creates follow" }),
    mode: z.enum(["trailing", "leading"]).default("trailing").meta({
      description: "trailing: the job runs once the creates stop for periodMs, with the latest target; leading: the first create's job runs at once and later creates in the window return it",
    }),
  })
  .refine((d) => d.maxWaitMs === undefined || d.maxWaitMs >= d.periodMs, { message: "maxWaitMs must be at least periodMs", path: ["maxWaitMs"] })
  .meta({ id: "Debounce" });

const metadataSchema = z
  .record(z.string().max(100), z.unknown())
  .refine((m) => JSON.stringify(m).length <= 16_384, "metadata is limited to 16 KiB of JSON")
  .meta({ description: "Free-form JSON object (at most 16 KiB), returned as given" });

// Strict: an unknown field is refused (a typo like "delay" for "delayMs" must not pass silently).
export const createJobSchema = z
  .strictObject({
    queue: z.string().min(1).max(63).default("default"),
    target: httpTargetSchema,
    runAt: timestamp.optional().meta({ description: "Earliest start (database clock). Omit both runAt and delayMs to run now." }),
    delayMs: z.number().int().min(0).max(366 * 86_400_000).optional(),
    priority: z.number().int().min(-1000).max(1000).default(0).meta({ description: "Higher first, among one tenant's due jobs" }),
    maxAttempts: z.number().int().min(1).max(100).optional(),
    backoff: backoffSchema.optional(),
    expiresAt: timestamp.optional().meta({ description: "Past this instant the job is not started any more; it ends as expired" }),
    callbackUrl: httpUrlSchema.optional().meta({ description: "Receives a signed webhook when the job finishes" }),
    dependencyKey: z.string().min(1).max(200).optional().meta({ description: "Circuit-breaker key; defaults to the target host" }),
    flowKey: flowKeySchema.optional().meta({
      description: "What this job isolates inside its queue (a customer, an account, an endpoint): the queue's per-key limits and fair share apply per flow key",
    }),
    debounce: debounceSchema.optional(),
    metadata: metadataSchema.default({}),
  })
  .refine((j) => !(j.runAt !== undefined && j.delayMs !== undefined), { message: "give runAt or delayMs, not both", path: ["delayMs"] })
  .refine((j) => j.debounce === undefined || (j.runAt === undefined && j.delayMs === undefined), {
    message: "a debounced job's due time is its window's end: give debounce without runAt or delayMs",
    path: ["debounce"],
  })
  .refine((j) => j.expiresAt === undefined || j.runAt === undefined || Date.parse(j.expiresAt) > Date.parse(j.runAt), {
    message: "expiresAt must be after runAt",
    path: ["expiresAt"],
  })
  .meta({ id: "CreateJob" });

export type CreateJobInput = z.input<typeof createJobSchema>;
export type CreateJob = z.output<typeof createJobSchema>;

/** Where a job's trace is (docs/observability.md, "Traces"). */
export const jobTraceSchema = z
  .object({
    traceId: z.string().meta({ description: "32 hex digits: the trace of the job, its attempts and its completion webhooks" }),
    traceparent: z.string().meta({
      description:
        "W3C traceparent of the job's span: every attempt's request to the target, and every webhook delivery, is sent with a traceparent of this trace whose parent is this span",
    }),
    tracestate: z.string().nullable().meta({ description: "The creating request's tracestate, passed on unchanged" }),
  })
  .meta({ id: "JobTrace" });

export const jobSchema = z
  .object({
    id: uuid,
    queue: z.string(),
    status: jobStatusSchema,
    version: z.number().int(),
    dueAt: timestamp,
    expiresAt: nullableTimestamp,
    priority: z.number().int(),
    idempotencyKey: z.string().nullable(),
    target: z.object({
      method: z.string(),
      url: z.string(),
      headers: z.record(z.string(), z.string()),
      body: z.string().nullable(),
      timeoutMs: z.number().int(),
    }),
    attemptCount: z.number().int(),
    maxAttempts: z.number().int(),
    backoff: backoffSchema,
    callbackUrl: z.string().nullable(),
    dependencyKey: z.string().nullable(),
    flowKey: z.string().nullable(),
    debounceKey: z.string().nullable().meta({ description: "The debounce window this job collects creates for, while it is scheduled" }),
    metadata: z.record(z.string(), z.unknown()),
    lastError: z.unknown().nullable(),
    result: z.unknown().nullable(),
    scheduleId: uuid.nullable(),
    occurrenceAt: nullableTimestamp,
    replayId: uuid.nullable().meta({ description: "The DLQ replay that last released this job" }),
    cancelRequestedAt: nullableTimestamp,
    trace: jobTraceSchema.nullable().meta({ description: "The job's trace: the creating request's traceparent (or a new trace); null for jobs created before traces were kept" }),
    createdAt: timestamp,
    updatedAt: timestamp,
    finishedAt: nullableTimestamp,
  })
  .meta({ id: "Job" });

export type Job = z.output<typeof jobSchema>;

export const ATTEMPT_STATUSES = ["pending", "running", "succeeded", "failed", "lease_expired", "discarded"] as const;

export const attemptSchema = z
  .object({
    id: uuid.meta({ description: "Attempt ID, sent to the target as Tick-Attempt-Id" }),
    number: z.number().int(),
    status: z.enum(ATTEMPT_STATUSES),
    fencingToken: z.string().meta({ description: "Strictly increasing per job (a decimal integer)" }),
    workerId: z.string().nullable(),
    dispatchedAt: timestamp,
    startedAt: nullableTimestamp,
    finishedAt: nullableTimestamp,
    leaseExpiresAt: nullableTimestamp,
    outcome: z.string().nullable(),
    httpStatus: z.number().int().nullable(),
    error: z.unknown().nullable(),
    durationMs: z.number().int().nullable(),
  })
  .meta({ id: "Attempt" });

export const jobWithAttemptsSchema = jobSchema.extend({ attempts: z.array(attemptSchema) }).meta({ id: "JobWithAttempts" });

/** GET /jobs/{id}: the job, its attempts, and why it waits. */
export const jobDetailSchema = jobWithAttemptsSchema
  .extend({
    waiting: waitingSchema.nullable().meta({ description: "Why the job is not running (scheduled or dispatched jobs); null once it runs or ends" }),
  })
  .meta({ id: "JobDetail" });

/** A create's answer: the job, and for a create a debounce folded into an existing job, that job's ID. */
export const createdJobSchema = jobSchema
  .extend({
    debouncedInto: uuid.optional().meta({ description: "The create was folded into this existing job by its debounce (the job shown); absent when a job was created" }),
  })
  .meta({ id: "CreatedJob" });

export const listJobsQuerySchema = z.object({
  status: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (!s) return undefined;
      const values = s.split(",").map((v) => v.trim());
      const bad = values.filter((v) => !(JOB_STATUSES as readonly string[]).includes(v));
      if (bad.length) ctx.addIssue({ code: "custom", message: `unknown status ${bad.join(", ")}` });
      return values as (typeof JOB_STATUSES)[number][];
    })
    .meta({ description: "Comma-separated statuses" }),
  queue: z.string().max(63).optional(),
  scheduleId: uuid.optional(),
  idempotencyKey: z.string().max(255).optional().meta({ description: "Only the job created with this idempotency key" }),
  dependency: z.string().max(200).optional().meta({ description: "Only jobs of this dependency (their circuit-breaker key: the target host unless the job named one)" }),
  flowKey: z.string().min(1).max(255).optional().meta({ description: "Only jobs of this flow key (in any queue; with `queue`, that queue's)" }),
  createdAfter: timestamp.optional(),
  createdBefore: timestamp.optional(),
  ...pageQuery,
});

export const jobPageSchema = page(jobSchema).meta({ id: "JobPage" });

export const batchCreateSchema = z
  .object({
    jobs: z
      .array(z.looseObject({ idempotencyKey: idempotencyKeySchema.optional() }).meta({ description: "A CreateJob plus an optional idempotencyKey" }))
      .min(1)
      .max(1000),
  })
  .meta({ id: "BatchCreateJobs" });

export const batchResultSchema = z
  .object({
    results: z.array(
      z.object({
        index: z.number().int(),
        status: z.number().int().meta({ description: "201 created, 200 idempotent replay, else the problem's status" }),
        replayed: z.boolean().optional(),
        debouncedInto: uuid.optional(),
        job: jobSchema.optional(),
        error: problemSchema.optional(),
      }),
    ),
  })
  .meta({ id: "BatchCreateResult" });

export const CANCEL_OUTCOMES = ["cancelled", "cancelled_after_attempts", "running"] as const;
export type CancelOutcome = (typeof CANCEL_OUTCOMES)[number];

export const cancelResultSchema = z
  .object({
    outcome: z.enum(CANCEL_OUTCOMES).meta({
      description:
        "cancelled (200): no attempt ever started and none will; the target never received this job. " +
        "cancelled_after_attempts (200): no attempt starts after this answer, but `attemptsStarted` earlier attempts " +
        "did: each may have reached the target and had its effect, even one that then failed or timed out. " +
        "running (202): an attempt is executing now; it may still complete and its side effect may already have " +
        "happened; no further attempt will be made.",
    }),
    attemptsStarted: z.number().int().min(0).meta({ description: "Attempts that had started before the cancel took effect" }),
    repeated: z.boolean().meta({
      description: "True when an earlier request had already cancelled the job (or recorded the cancel of its running attempt): this answer repeats that one and changed nothing",
    }),
    job: jobSchema,
  })
  .meta({ id: "CancelResult" });

export { problemSchema };

export const dlqQuerySchema = z.object({
  queue: z.string().max(63).optional(),
  errorKind: z.string().max(50).optional().meta({ description: "retryable, non_retryable, timeout, retry_after, lease_expired, target_not_allowed, ..." }),
  dependency: z.string().max(200).optional(),
  httpStatus: z.coerce.number().int().min(100).max(599).optional(),
  since: timestamp.optional().meta({ description: "Dead since (finishedAt ≥)" }),
  until: timestamp.optional(),
  ...pageQuery,
});

export const dlqPageSchema = page(jobWithAttemptsSchema).meta({ id: "DeadJobPage" });
