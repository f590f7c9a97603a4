import { z } from "zod";
import { REPLAY_DEFAULTS, REPLAY_STATES } from "@tick/core";
import { nullableTimestamp, page, pageQuery, timestamp, uuid } from "./common.js";
import { jobSchema } from "./jobs.js";

/** Which dead jobs a replay takes: the DLQ listing's filters. `{}` means every dead job. */
export const replayFilterSchema = z
  .object({
    queue: z.string().max(63).optional(),
    errorKind: z.string().max(50).optional(),
    dependency: z.string().max(200).optional(),
    httpStatus: z.number().int().min(100).max(599).optional(),
    since: timestamp.optional(),
    until: timestamp.optional(),
  })
  .strict()
  .meta({ id: "ReplayFilter" });

export const createReplaySchema = z
  .object({
    filter: replayFilterSchema.optional(),
    jobIds: z.array(uuid).min(1).max(1_000).optional().meta({ description: "Replay exactly these dead jobs (with `filter`, those of them that match)" }),
    dryRun: z.boolean().default(false).meta({ description: "Count and sample what would be replayed; nothing changes" }),
    ratePerSecond: z
      .number()
      .positive()
      .max(REPLAY_DEFAULTS.maxRatePerSecond)
      .default(REPLAY_DEFAULTS.ratePerSecond)
      .meta({ description: "Jobs released per second, evenly spaced" }),
    failureThreshold: z
      .number()
      .min(0)
      .max(1)
      .default(REPLAY_DEFAULTS.failureThreshold)
      .meta({ description: "Pause automatically when more than this share of the last `failureWindow` replayed jobs fail again (1 never pauses)" }),
    failureWindow: z.number().int().min(1).max(1_000).default(REPLAY_DEFAULTS.failureWindow),
    attempts: z
      .number()
      .int()
      .min(1)
      .max(REPLAY_DEFAULTS.maxAttempts)
      .default(REPLAY_DEFAULTS.attempts)
      .meta({ description: "Attempts each replayed job gets before it is dead again" }),
  })
  .strict()
  .refine((b) => b.filter !== undefined || b.jobIds !== undefined, {
    message: "Say what to replay: a filter (`{}` for every dead job) or jobIds",
    path: ["filter"],
  })
  .meta({ id: "CreateReplay" });

export const replayProgressSchema = z.object({
  total: z.number().int().meta({ description: "Dead jobs the replay took" }),
  released: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int().meta({ description: "Released jobs that ended dead or expired again" }),
  skipped: z.number().int().meta({ description: "No longer dead at their turn, cancelled, or withdrawn by cancelling the replay" }),
  inFlight: z.number().int().meta({ description: "Released, not finished yet" }),
  remaining: z.number().int().meta({ description: "Not released yet" }),
});

export const replaySchema = z
  .object({
    id: uuid,
    status: z.enum(REPLAY_STATES),
    statusReason: z.string().nullable().meta({ description: "Why the replay paused itself" }),
    actor: z.string().meta({ description: "Who started it: user:<id> or api_key:<id>" }),
    actorName: z.string().meta({ description: "Who started it, as a person reads it: a user's email or an API key's name and prefix" }),
    filter: z.record(z.string(), z.unknown()),
    ratePerSecond: z.number(),
    failureThreshold: z.number(),
    failureWindow: z.number().int(),
    attempts: z.number().int(),
    progress: replayProgressSchema,
    createdAt: timestamp,
    updatedAt: timestamp,
    finishedAt: nullableTimestamp,
  })
  .meta({ id: "Replay" });

export type Replay = z.output<typeof replaySchema>;

export const replayPreviewSchema = z
  .object({
    dryRun: z.literal(true),
    count: z.number().int().meta({ description: "Dead jobs matching now (no other replay holds them)" }),
    wouldTake: z.number().int().meta({ description: `At most ${REPLAY_DEFAULTS.maxJobs} per replay` }),
    sample: z.array(jobSchema).meta({ description: "The first jobs in release order (highest priority, oldest death)" }),
    estimatedSeconds: z.number().meta({ description: "Release time at the requested rate" }),
  })
  .meta({ id: "ReplayPreview" });

export const replayListQuerySchema = z.object({ ...pageQuery });
export const replayPageSchema = page(replaySchema).meta({ id: "ReplayPage" });
