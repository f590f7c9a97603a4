import { z } from "zod";
import { passwordSchema } from "./accounts.js";
import { timestamp, uuid } from "./common.js";

// The signed-in person's own account: their console sessions and their password. These operations take the
// person's console session only (scope `account`), never an API key, and belong to no tenant.

/** One active console sign-in of the person (a browser, until it signs out, idles or reaches its lifetime). */
export const accountSessionSchema = z
  .object({
    id: uuid,
    createdAt: timestamp.meta({ description: "When the person signed in" }),
    lastSeenAt: timestamp.meta({ description: "Its last request, to within a minute (the idle lifetime counts from here)" }),
    expiresAt: timestamp.meta({ description: "Its absolute end (TICK_SESSION_MAX_AGE after the sign-in), whatever the activity" }),
    idleExpiresAt: timestamp.meta({ description: "When it ends if it makes no request before (TICK_SESSION_IDLE_TIMEOUT after lastSeenAt)" }),
    userAgent: z.string().nullable().meta({ description: "The browser's User-Agent at sign-in" }),
    current: z.boolean().meta({ description: "The session making this request" }),
  })
  .meta({ id: "AccountSession" });
export type AccountSession = z.output<typeof accountSessionSchema>;

export const accountSessionListSchema = z
  .object({ data: z.array(accountSessionSchema).meta({ description: "Active sessions, most recently seen first (at most 100)" }) })
  .meta({ id: "AccountSessionList" });

export const endedSessionsSchema = z
  .object({ ended: z.number().int().min(0).meta({ description: "Sessions this request ended (0 when they had already ended)" }) })
  .meta({ id: "EndedSessions" });

export const changePasswordSchema = z
  .object({
    currentPassword: z.string().min(1).max(200),
    newPassword: passwordSchema,
  })
  .meta({ id: "ChangePassword" });

export const passwordChangedSchema = z
  .object({ endedSessions: z.number().int().min(0).meta({ description: "The person's other sessions, signed out by the change" }) })
  .meta({ id: "PasswordChanged" });
