import { z } from "zod";
import { nullableTimestamp, timestamp, uuid } from "./common.js";
import { apiKeyScopeSchema, consoleRoleSchema } from "./scopes.js";

export const createApiKeySchema = z
  .object({
    name: z.string().min(1).max(100),
    scopes: z.array(apiKeyScopeSchema).min(1).max(20),
    expiresAt: timestamp.optional(),
  })
  .meta({ id: "CreateApiKey" });

export const apiKeySchema = z
  .object({
    id: uuid,
    name: z.string(),
    prefix: z.string().meta({ description: "Public part of the key, shown in listings" }),
    scopes: z.array(z.string()),
    role: consoleRoleSchema.meta({
      description:
        "The most this key may do, whatever its scopes: the role of the person (or key) that made it, lowered when " +
        "that person's role is lowered or they leave. Owner-only actions need an owner key.",
    }),
    createdAt: timestamp,
    lastUsedAt: nullableTimestamp,
    expiresAt: nullableTimestamp,
    revokedAt: nullableTimestamp,
  })
  .meta({ id: "ApiKey" });

export const createdApiKeySchema = z
  .object({ key: z.string().meta({ description: "The secret key: shown once, store it now" }), apiKey: apiKeySchema })
  .meta({ id: "CreatedApiKey" });

export type ApiKey = z.output<typeof apiKeySchema>;
