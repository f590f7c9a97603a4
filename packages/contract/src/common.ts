import { z } from "zod";
import { ERROR_CODES, problemType, type ErrorCode } from "@tick/core";

export const uuid = z.uuid();
export const timestamp = z.iso.datetime({ offset: true }).meta({ description: "RFC 3339 instant" });
export const nullableTimestamp = timestamp.nullable();

/**
 * Every URL a tenant gives (job target, callback, webhook endpoint). Control characters are refused, not
 * cleaned: a URL parser silently drops tabs and line breaks and the worker strips them when sending, so
 * a URL holding one is not the URL it looks like (and could smuggle a header into a hand-built request).
 * Whether it may be called at all (scheme, address) is checked by the SSRF rules, not here.
 */
export const httpUrlSchema = z
  .string()
  .max(2048)
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f]*$/, "URLs may not contain control characters (CR, LF, TAB, any other below U+0020, or DEL)");

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
