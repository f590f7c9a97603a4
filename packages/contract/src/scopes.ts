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
  "webhooks:read",
  "webhooks:write",
  "audit:read",
  "keys:read",
  "keys:write",
  "members:read",
  "members:write",
  "admin",
] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];
export const apiKeyScopeSchema = z.enum(API_KEY_SCOPES);

export function hasScope(granted: readonly string[], needed: ApiKeyScope): boolean {
  return granted.includes("admin") || granted.includes(needed);
}

/** Console roles, most powerful first. */
export const CONSOLE_ROLES = ["owner", "admin", "operator", "viewer"] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];
export const consoleRoleSchema = z.enum(CONSOLE_ROLES);

const READ_SCOPES = ["jobs:read", "schedules:read", "queues:read", "dlq:read", "audit:read", "keys:read", "members:read", "webhooks:read"] as const satisfies readonly ApiKeyScope[];

/**
 * What a signed-in console user may do through the API, by role: viewers read; operators also run
 * the tenant's work (jobs, schedules, queues, DLQ replay); admins and owners hold every scope.
 */
export const ROLE_SCOPES: Readonly<Record<ConsoleRole, readonly ApiKeyScope[]>> = {
  viewer: READ_SCOPES,
  operator: [...READ_SCOPES, "jobs:write", "schedules:write", "queues:write", "dlq:replay"],
  admin: ["admin"],
  owner: ["admin"],
};
