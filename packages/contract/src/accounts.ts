import { z } from "zod";
import { uuid } from "./common.js";
import { nullableTimestamp, timestamp } from "./common.js";
import { createdApiKeySchema } from "./keys.js";
import { consoleRoleSchema } from "./scopes.js";

/** A tenant's URL name: lowercase letters, digits and single hyphens, 3 to 40 characters. */
export const tenantSlugSchema = z
  .string()
  .min(3)
  .max(40)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, "lowercase letters, digits and single hyphens, not at either end");

export const emailSchema = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email())
  .transform((e) => e.toLowerCase());

/**
 * A password someone sets or proves: long enough to resist guessing, never only spaces; the upper bound keeps
 * hashing cheap for the server. The console's server also refuses passwords that are common or close to one
 * (apps/console/src/server/services/password-policy.ts): that check needs a list of tens of thousands of
 * passwords, too large for this contract, which the browser bundle includes.
 */
export const passwordSchema = z
  .string()
  .min(12, "at least 12 characters")
  .max(200, "at most 200 characters")
  .regex(/\S/, "cannot be only spaces");

export const signUpSchema = z
  .object({
    tenantName: z.string().trim().min(1).max(100),
    /** Derived from tenantName when absent. */
    slug: tenantSlugSchema.optional(),
    email: emailSchema,
    password: passwordSchema,
    name: z.string().trim().min(1).max(100).optional(),
  })
  .meta({ id: "SignUp" });

/** What sign-up answers for every email, with or without an account: the link is in the mail, nothing else here. */
export const signUpRequestedSchema = z
  .object({
    status: z.literal("verification_sent"),
    /** The address the confirmation link was sent to (as given, lower-cased). */
    email: z.string(),
    /** When the link stops working (TICK_SIGNUP_TTL after the request). */
    expiresAt: timestamp,
  })
  .meta({ id: "SignUpRequested" });
export type SignUpRequested = z.output<typeof signUpRequestedSchema>;

/** The token from a sign-up confirmation link (`/signup/verify#token=…`). */
export const verifySignupSchema = z.object({ token: z.string().min(20).max(200) }).meta({ id: "VerifySignup" });

export const tenantSummarySchema = z.object({ id: uuid, slug: z.string(), name: z.string() }).meta({ id: "TenantSummary" });

export const signUpResultSchema = z
  .object({
    tenant: tenantSummarySchema,
    user: z.object({ id: uuid, email: z.string() }),
    /** The tenant's first API key (admin scope): shown once. */
    firstKey: createdApiKeySchema,
  })
  .meta({ id: "SignUpResult" });

/** A slug from a display name: "Acme Payments, Inc." → "acme-payments-inc". */
export function slugify(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "");
  return slug.length >= 3 ? slug : `${slug || "tenant"}-${Math.random().toString(36).slice(2, 6)}`;
}

export const memberSchema = z
  .object({
    userId: uuid,
    email: z.string(),
    name: z.string().nullable(),
    role: consoleRoleSchema,
    joinedAt: timestamp,
  })
  .meta({ id: "Member" });

export const invitationSchema = z
  .object({
    id: uuid,
    email: z.string(),
    role: consoleRoleSchema,
    /** pending, accepted, revoked or expired. */
    state: z.enum(["pending", "accepted", "revoked", "expired"]),
    invitedBy: z.string().meta({ description: "Email of the member who invited" }),
    createdAt: timestamp,
    expiresAt: timestamp,
    acceptedAt: nullableTimestamp,
  })
  .meta({ id: "Invitation" });

export const memberListSchema = z.object({ data: z.array(memberSchema), invitations: z.array(invitationSchema) }).meta({ id: "MemberList" });

export const createInvitationSchema = z.object({ email: emailSchema, role: consoleRoleSchema }).meta({ id: "CreateInvitation" });

export const createdInvitationSchema = z
  .object({
    invitation: invitationSchema,
    /** The link to send to the person: holds the single-use token, shown only now. */
    acceptUrl: z.string(),
    /** Whether it was also sent by email (SMTP_URL set and the send succeeded). */
    emailed: z.boolean(),
  })
  .meta({ id: "CreatedInvitation" });

export const updateMemberSchema = z.object({ role: consoleRoleSchema }).meta({ id: "UpdateMember" });

export const acceptInvitationSchema = z
  .object({
    token: z.string().min(20).max(200),
    /** A new account's password, or the existing account's (which proves it is theirs). */
    password: passwordSchema,
    name: z.string().trim().min(1).max(100).optional(),
  })
  .meta({ id: "AcceptInvitation" });

export const acceptedInvitationSchema = z
  .object({ tenant: tenantSummarySchema, user: z.object({ id: uuid, email: z.string() }), role: consoleRoleSchema })
  .meta({ id: "AcceptedInvitation" });

export const invitationPreviewSchema = z
  .object({ tenant: tenantSummarySchema, email: z.string(), role: consoleRoleSchema, expiresAt: timestamp, accountExists: z.boolean() })
  .meta({ id: "InvitationPreview" });

export type Member = z.output<typeof memberSchema>;
export type Invitation = z.output<typeof invitationSchema>;

/** A tenant as a platform operator sees it: identity, limits, state and size. */
export const operatorTenantSchema = z
  .object({
    id: uuid,
    slug: z.string(),
    name: z.string(),
    createdAt: timestamp,
    suspendedAt: nullableTimestamp,
    weight: z.number().int(),
    admissionRate: z.number(),
    admissionBurst: z.number().int(),
    maxPendingJobs: z.number().int(),
    maxInFlight: z.number().int(),
    members: z.number().int(),
    pendingJobs: z.number().int().meta({ description: "Jobs scheduled, dispatched or running now" }),
  })
  .meta({ id: "OperatorTenant" });

export const operatorTenantPageSchema = z
  .object({ data: z.array(operatorTenantSchema), nextCursor: z.string().nullable() })
  .meta({ id: "OperatorTenantPage" });

export const operatorTenantQuerySchema = z.object({
  /** Part of the slug or name. */
  search: z.string().trim().max(100).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** The last slug of the previous page. */
  cursor: z.string().max(100).optional(),
});

export const updateTenantLimitsSchema = z
  .strictObject({
    weight: z.number().int().min(1).max(1000).optional(),
    admissionRate: z.number().min(0.1).max(100_000).optional(),
    admissionBurst: z.number().int().min(1).max(1_000_000).optional(),
    maxPendingJobs: z.number().int().min(1).max(100_000_000).optional(),
    maxInFlight: z.number().int().min(1).max(100_000).optional(),
  })
  .refine((s) => Object.keys(s).length > 0, { message: "give at least one limit" })
  .meta({ id: "UpdateTenantLimits" });

export const suspendTenantSchema = z.object({ reason: z.string().trim().min(1).max(500) }).meta({ id: "SuspendTenant" });

export type OperatorTenant = z.output<typeof operatorTenantSchema>;
