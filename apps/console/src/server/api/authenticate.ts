import { AppError } from "@tick/core";
import { ROLE_ACTIONS, ROLE_SCOPES, roleAtLeast, scopesWithinRole, type ConsoleRole, type RoleAction } from "@tick/contract";
import { apiKeyMatches, parseApiKey, sql, type Queryable } from "@tick/db";
import type { ConsoleUser } from "../auth";
import { createBatchQueue } from "@tick/runtime";
import { getEnv } from "../env";
import type { RequestHead } from "./request-head";

export interface ApiPrincipal {
  /** Who acts, for the audit log: an API key, or a console user signed in with a session. */
  actor: { type: "api_key" | "user"; id: string };
  /**
   * The most the principal may do: a console user's membership role, or an API key's role (its maker's).
   * Scopes say which operations a credential may call; the role caps them and decides owner-only actions.
   */
  role: ConsoleRole;
  scopes: readonly string[];
  tenant: { id: string; shard: number; admissionRate: number; admissionBurst: number; maxPendingJobs: number };
}

/** The audit-row fields naming the principal and its tenant. */
export const auditActor = (p: ApiPrincipal) => ({ tenantId: p.tenant.id, actorType: p.actor.type, actorId: p.actor.id });

const unauthorized = (detail: string) => new AppError("unauthorized", detail);
const suspended = () =>
  new AppError("tenant_suspended", "This tenant is suspended by the platform's operators: its jobs wait and nothing is lost. Contact them to resume it.");

/** Finds an API key's row by its public prefix (null: no such key). */
export type ApiKeyLookup = (prefix: string) => Promise<sql.ApiKeyAuthRow | null>;

/** Most keys looked up in one statement. */
const KEYS_PER_LOOKUP = 500;

/**
 * API key lookups as a group commit: a lookup goes out at once when none is in flight, and the ones that
 * arrive meanwhile go out together in one statement when it returns. Each request's lookup is still
 * sent after the request arrived, so a key revoked before a request came is never taken from an older read.
 */
export function createApiKeyLookup(db: Queryable): ApiKeyLookup {
  const queue = createBatchQueue<string, sql.ApiKeyAuthRow | null>({
    maxBatch: KEYS_PER_LOOKUP,
    runBatch: async (prefixes) => {
      const rows = new Map((await sql.findApiKeysForAuth(db, [...new Set(prefixes)])).map((r) => [r.prefix, r]));
      return prefixes.map((p) => rows.get(p) ?? null);
    },
    runOne: async (prefix) => (await sql.findApiKeysForAuth(db, [prefix]))[0] ?? null,
  });
  return (prefix) => queue.submit(prefix);
}

/**
 * Resolves `Authorization: Bearer <key>` to its key and tenant. Looked up by the key's public prefix
 * and compared by hash in constant time; read fresh on every request, so a revoked key fails at once.
 */
export async function authenticateApiKey(db: Queryable, lookup: ApiKeyLookup, authorization: string | null): Promise<ApiPrincipal> {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
  if (!match) throw unauthorized("Send the API key as `Authorization: Bearer <key>`.");
  const parsed = parseApiKey(match[1]!);
  if (!parsed) throw unauthorized("The API key is malformed.");
  const row = await lookup(parsed.prefix);
  if (!row || !apiKeyMatches(match[1]!, row.hash)) throw unauthorized("The API key is not valid.");
  if (row.revoked_at) throw unauthorized("The API key has been revoked.");
  if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw unauthorized("The API key has expired.");
  if (row.suspended_at) throw suspended();
  // Fire and forget: bookkeeping must not fail or slow the request (it writes at most once a minute, and
  // is not even sent while the row read says the key was marked within the minute, which spares every create a round trip).
  if (!row.last_used_at || Date.now() - row.last_used_at.getTime() >= 60_000) sql.touchApiKey(db, row.key_id).catch(() => {});
  return {
    actor: { type: "api_key", id: row.key_id },
    role: row.role,
    scopes: scopesWithinRole(row.scopes, row.role),
    tenant: {
      id: row.tenant_id,
      shard: row.shard,
      admissionRate: row.admission_rate,
      admissionBurst: row.admission_burst,
      maxPendingJobs: row.max_pending_jobs,
    },
  };
}

/**
 * A console user calling the API from the console (session cookie, no API key): the tenant is the
 * `Tick-Tenant` header's (one of the user's memberships) or the one the user last switched to in the
 * console (the first membership if none), and the scopes are
 * the membership role's. Writes must come from the console's own origin: a cross-site page cannot
 * borrow the session (the cookie is SameSite=Lax too, and JSON bodies need a CORS preflight).
 */
export async function authenticateSession(db: Queryable, user: ConsoleUser | null, request: RequestHead): Promise<ApiPrincipal> {
  if (!user) throw unauthorized("Send the API key as `Authorization: Bearer <key>`, or sign in to the console.");
  const wanted = request.headers.get("tick-tenant");
  const membership = wanted ? user.memberships.find((m) => m.tenantId === wanted) : user.current;
  if (!membership) throw new AppError("forbidden", "You are not a member of this tenant.");
  assertSameOrigin(request);
  const tenant = await sql.findTenantLimits(db, membership.tenantId);
  if (!tenant) throw new AppError("forbidden", "You are not a member of this tenant.");
  if (tenant.suspendedAt) throw suspended();
  return { actor: { type: "user", id: user.id }, role: membership.role, scopes: ROLE_SCOPES[membership.role], tenant };
}

/**
 * The one check for actions that need a role rather than a scope (ROLE_ACTIONS in @tick/contract): the
 * principal's role, a person's or an API key's, must be at least the action's. 403 `insufficient-role`.
 */
export function requireRole(principal: ApiPrincipal, action: RoleAction, detail: string): void {
  const needed = ROLE_ACTIONS[action];
  if (roleAtLeast(principal.role, needed)) return;
  const who = principal.actor.type === "api_key" ? `This API key acts as ${principal.role} (the role of whoever made it)` : `You are ${principal.role}`;
  throw new AppError("insufficient_role", `${detail} ${who}; this needs ${needed}.`, { extra: { requiredRole: needed, role: principal.role } });
}

/**
 * Session writes must come from the console's own origin: a cross-site page cannot borrow the session
 * (the cookie is SameSite=Lax too, and JSON bodies need a CORS preflight). The Origin header must equal the
 * console's configured public origin (NEXTAUTH_URL: scheme, host and port); a missing, `null` or malformed
 * Origin on a write is refused the same way (403), never parsed into an error.
 */
export function assertSameOrigin(request: RequestHead): void {
  if (request.method === "GET" || request.method === "HEAD") return;
  if (!isConsoleOrigin(request.headers.get("origin"))) throw new AppError("forbidden", "Console writes must come from the console itself.");
}

/** True when `origin` (an Origin header) is exactly the console's public origin. */
function isConsoleOrigin(origin: string | null): boolean {
  if (!origin || origin === "null") return false;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  // An Origin is scheme://host[:port] and nothing else; URL.origin normalizes default ports and case.
  return parsed.origin === origin.toLowerCase().replace(/\/$/, "") && parsed.origin === consoleOrigin();
}

let cachedOrigin: string | undefined;
const consoleOrigin = () => (cachedOrigin ??= new URL(getEnv().NEXTAUTH_URL).origin);
