import { z } from "zod";
import { timestamp } from "./common.js";

// The overview's time series: GET /stats reads the per-minute rollups the scheduler maintains
// (finished jobs by outcome with a lag histogram; each queue's figures sampled once a minute).

/** A chart window and its bins: the last bin holds now; bins are aligned to their size (UTC epoch). */
export const STATS_WINDOWS = {
  "1h": { binSeconds: 60, bins: 60 },
  "24h": { binSeconds: 900, bins: 96 },
  "7d": { binSeconds: 7_200, bins: 84 },
} as const;

export type StatsWindow = keyof typeof STATS_WINDOWS;

export const statsQuerySchema = z.object({
  window: z
    .enum(Object.keys(STATS_WINDOWS) as [StatsWindow, ...StatsWindow[]])
    .default("1h")
    .meta({ description: "1h: 60 one-minute bins; 24h: 96 bins of 15 minutes; 7d: 84 bins of 2 hours" }),
});

const count = (description: string) => z.number().int().meta({ description });
const nullableCount = (description: string) => z.number().int().nullable().meta({ description });

export const statsBinSchema = z
  .object({
    at: timestamp.meta({ description: "Start of the bin" }),
    succeeded: count("Jobs that finished succeeded in the bin"),
    dead: count("Jobs that went dead (to the DLQ) in the bin"),
    cancelled: count("Jobs cancelled in the bin"),
    expired: count("Jobs that expired in the bin"),
    rateLimited: count("Jobs dropped by their flow key's rate in the bin"),
    lagP50Ms: z
      .number()
      .nullable()
      .meta({
        description:
          "Median scheduling lag (the finishing attempt's start − the job's due time) of the succeeded and dead jobs of the bin, " +
          "as the upper bound of its histogram bucket (10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000 ms); " +
          "in the open bucket above 300000 ms it reads 300000 (a lower bound). Null when no such job finished in the bin",
      }),
    lagP99Ms: z.number().nullable().meta({ description: "99th percentile of the same lag, read the same way" }),
    dlq: nullableCount("Dead jobs waiting in the DLQ, summed over queues at the bin's last sampled minute; null when none was sampled"),
  })
  .meta({ id: "StatsBin" });

export const queueGaugePointSchema = z
  .object({
    at: timestamp.meta({ description: "Start of the bin" }),
    due: nullableCount("Jobs scheduled and due"),
    waiting: nullableCount("Jobs scheduled, due or not"),
    inFlight: nullableCount("Jobs dispatched or running"),
    oldestDueAgeMs: z.number().nullable().meta({ description: "How long the oldest due job had waited past its due time; null when none was due" }),
  })
  .meta({
    id: "QueueGaugePoint",
    description: "The queue's figures at the bin's last sampled minute (sampled once a minute); every field null when none was sampled in the bin",
  });

export const dependencyStatsPointSchema = z
  .object({
    at: timestamp.meta({ description: "Start of the bin" }),
    finished: count("Jobs of the dependency that finished in the bin (every outcome)"),
    dead: count("Of those, the ones that went dead"),
    failureRate: z.number().nullable().meta({ description: "dead / finished; null when none finished" }),
  })
  .meta({ id: "DependencyStatsPoint" });

export const breakerOpeningsPointSchema = z
  .object({
    at: timestamp.meta({ description: "Start of the bin" }),
    openings: count("Times the dependency's circuit breaker opened in the bin"),
  })
  .meta({ id: "BreakerOpeningsPoint" });

export const statsSchema = z
  .object({
    window: z.enum(Object.keys(STATS_WINDOWS) as [StatsWindow, ...StatsWindow[]]),
    binSeconds: z.number().int(),
    from: timestamp.meta({ description: "Start of the first bin" }),
    to: timestamp.meta({ description: "End of the last bin (after now: the last bin holds now)" }),
    bins: z.array(statsBinSchema).meta({ description: "Every bin of the window, oldest first" }),
    queues: z
      .array(z.object({ queue: z.string(), points: z.array(queueGaugePointSchema).meta({ description: "One per bin, as `bins`" }) }))
      .meta({ description: "Every queue sampled in the window, by name" }),
    dependencies: z
      .array(z.object({ key: z.string(), points: z.array(dependencyStatsPointSchema).meta({ description: "One per bin, as `bins`" }) }))
      .meta({ description: "The 5 dependencies (dependencyKey) with the most finished jobs in the window, most first; jobs without one are left out" }),
    breakerOpenings: z
      .array(z.object({ key: z.string(), points: z.array(breakerOpeningsPointSchema).meta({ description: "One per bin, as `bins`" }) }))
      .meta({
        description: "Each dependency whose circuit breaker (the tenant's own: breakers are per tenant and dependency) opened in the window, by key",
      }),
  })
  .meta({ id: "Stats" });

export type Stats = z.output<typeof statsSchema>;
export type StatsQuery = z.output<typeof statsQuerySchema>;
