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

/** True when `role` is at least as powerful as `floor` (owner > admin > operator > viewer). */
export function roleAtLeast(role: ConsoleRole, floor: ConsoleRole): boolean {
  return CONSOLE_ROLES.indexOf(role) <= CONSOLE_ROLES.indexOf(floor);
}

/** The less powerful of two roles. */
export function lowerRole(a: ConsoleRole, b: ConsoleRole): ConsoleRole {
  return roleAtLeast(a, b) ? b : a;
}

/**
 * What a principal may do: the scopes of its credential, never more than its role allows. A console user's
 * scopes are its role's; an API key's are the scopes it was given, capped by the role of the person (or
 * key) that made it, so a key cannot do what its maker could not, even after the maker's role was lowered.
 */
export function scopesWithinRole(scopes: readonly string[], role: ConsoleRole): readonly string[] {
  const allowed = ROLE_SCOPES[role];
  if (allowed.includes("admin")) return scopes;
  if (scopes.includes("admin")) return allowed;
  return scopes.filter((s) => (allowed as readonly string[]).includes(s));
}

/**
 * Actions that need a role, not only a scope: whatever a credential's scopes say, these need a principal
 * whose role is the one named (a person's membership role, or an API key's role). One table, read by the
 * one check in the console (server/api/authenticate.ts: requireRole) and by docs/api.md.
 */
export const ROLE_ACTIONS = {
  /** Make someone an owner, change an owner's role, remove an owner, or invite someone as owner. */
  "owners:manage": "owner",
} as const satisfies Record<string, ConsoleRole>;
export type RoleAction = keyof typeof ROLE_ACTIONS;
