import { z } from "zod";
import { ERROR_CODES, problemType, type ErrorCode } from "@tick/core";

export const uuid = z.uuid();
export const timestamp = z.iso.datetime({ offset: true }).meta({ description: "RFC 3339 instant" });
export const nullableTimestamp = timestamp.nullable();

export const problemSchema = z
  .object({
    type: z.enum((Object.keys(ERROR_CODES) as ErrorCode[]).map(problemType) as [string, ...string[]]),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .loose()
  .meta({ id: "Problem", description: "RFC 9457 problem document; `type` is stable, switch on it." });

export type ProblemBody = z.output<typeof problemSchema>;

/** Cursor pagination: pass `nextCursor` back as `cursor` until it is null. */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
};

export const page = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), nextCursor: z.string().nullable() });
