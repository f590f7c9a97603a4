import { z } from "zod";
import { uuid } from "./common.js";
import { createdApiKeySchema } from "./keys.js";

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

/** Long enough to resist guessing; the upper bound keeps hashing cheap for the server. */
export const passwordSchema = z.string().min(12, "at least 12 characters").max(200);

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
