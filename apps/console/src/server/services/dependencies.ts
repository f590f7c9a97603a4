import type { Dependency } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { writeAudit } from "./audit";
import type { TenantServiceDeps } from "./tenant-service-deps";

type Deps = Pick<TenantServiceDeps, "pool" | "readBreakers">;

async function withBreakers(deps: Deps, tenantId: string, rows: sql.DependencyRow[]): Promise<Dependency[]> {
  const breakers = await deps.readBreakers(tenantId, rows.map((r) => r.key));
  return rows.map((r) => {
    const b = breakers?.get(r.key);
    return {
      key: r.key,
      paused: r.paused_at !== null,
      pausedAt: r.paused_at?.toISOString() ?? null,
      reason: r.reason,
      breaker: b ? { state: b.state, openUntil: b.openUntil === null ? null : new Date(b.openUntil).toISOString() } : null,
      due: r.due,
      inFlight: r.in_flight,
    };
  });
}

/** The dependencies the tenant's live jobs call and the ones it paused, with breaker state and counts (S11). */
export async function listDependencies(deps: Deps, tenantId: string): Promise<Dependency[]> {
  return withBreakers(deps, tenantId, await sql.listDependencies(deps.pool, tenantId));
}

async function getDependency(deps: Deps, tenantId: string, key: string): Promise<Dependency> {
  const [found] = await withBreakers(deps, tenantId, await sql.listDependencies(deps.pool, tenantId, key));
  // Resumed with no live job: it still exists as far as the caller is concerned, with nothing in it.
  return found ?? (await withBreakers(deps, tenantId, [{ key, paused_at: null, reason: null, due: 0, in_flight: 0 }]))[0]!;
}

/**
 * Pauses (or resumes) the tenant's jobs of one dependency: the claim holds them, scheduled. Idempotent; the
 * audit row is written, in the same transaction, only when the state changed.
 */
export async function setDependencyPaused(deps: Deps, principal: ApiPrincipal, key: string, paused: boolean, reason: string | null = null): Promise<Dependency> {
  const tenantId = principal.tenant.id;
  const actor = auditActor(principal);
  await inTransaction(deps.pool, async (client) => {
    const changed = paused
      ? await sql.pauseDependency(client, { tenantId, key, actorType: actor.actorType, actorId: actor.actorId, reason })
      : await sql.resumeDependency(client, tenantId, key);
    if (changed) {
      await writeAudit(client, {
        ...actor,
        action: paused ? "dependency.paused" : "dependency.resumed",
        targetType: "dependency",
        targetId: key,
        details: paused && reason ? { reason } : {},
      });
    }
  });
  return getDependency(deps, tenantId, key);
}
