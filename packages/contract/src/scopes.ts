import { z } from "zod";

/** Scopes an API key may carry. `admin` implies every other scope. */
export const API_KEY_SCOPES = [
  "jobs:read",
  "jobs:write",
  "schedules:read",
  "schedules:write",
  "queues:read",
  "queues:write",
  "dlq:read",
  "dlq:replay",
  "webhooks:write",
  "audit:read",
  "keys:read",
  "keys:write",
  "admin",
] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];
export const apiKeyScopeSchema = z.enum(API_KEY_SCOPES);

export function hasScope(granted: readonly string[], needed: ApiKeyScope): boolean {
  return granted.includes("admin") || granted.includes(needed);
}
