import { z } from "zod";
import { nullableTimestamp } from "./common.js";

/** A dependency as jobs name it (`dependencyKey`, by default the target host); URL-encode it in a path. */
export const dependencyKeySchema = z.string().min(1).max(200);

export const breakerStateSchema = z
  .object({
    state: z.enum(["closed", "open", "half_open"]).meta({ description: "open: its jobs are held; half_open: one probe at a time may run" }),
    openUntil: nullableTimestamp.meta({ description: "While open: when it half-opens (the breaker store's clock)" }),
  })
  .meta({ id: "BreakerState" });

export const dependencySchema = z
  .object({
    key: z.string(),
    paused: z.boolean().meta({ description: "Paused by the tenant: its jobs wait, scheduled, and no attempt is burned" }),
    pausedAt: nullableTimestamp,
    reason: z.string().nullable().meta({ description: "Why it was paused, as given when pausing" }),
    breaker: breakerStateSchema
      .nullable()
      .meta({ description: "The dependency's circuit breaker (shared by every tenant calling it); null when the breaker store did not answer" }),
    due: z.number().int().meta({ description: "The tenant's jobs of this dependency scheduled and due now" }),
    inFlight: z.number().int().meta({ description: "The tenant's jobs of this dependency dispatched or running" }),
  })
  .meta({ id: "Dependency" });

export const dependencyListSchema = z.object({ data: z.array(dependencySchema) }).meta({ id: "DependencyList" });

export const pauseDependencySchema = z
  .object({ reason: z.string().max(500).optional().meta({ description: "Why, for the people who look later" }) })
  .meta({ id: "PauseDependency" });

export type Dependency = z.output<typeof dependencySchema>;
export type BreakerStateView = z.output<typeof breakerStateSchema>;
