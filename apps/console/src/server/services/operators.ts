import { AppError } from "@tick/core";
import type { z } from "zod";
import type { OperatorTenant, operatorTenantQuerySchema, updateTenantLimitsSchema } from "@tick/contract";
import { prismaTransaction, sql, type PrismaClient } from "@tick/db";
import type { OperatorPrincipal } from "../api/route";
import { writeAudit } from "./audit";

/** What the platform operator services need (server/api/deps.ts: getOperatorDeps). */
export interface OperatorDeps {
  prisma: PrismaClient;
}

const view = (r: sql.OperatorTenantRow): OperatorTenant => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  createdAt: r.created_at.toISOString(),
  suspendedAt: r.suspended_at?.toISOString() ?? null,
  weight: r.weight,
  admissionRate: r.admission_rate,
  admissionBurst: r.admission_burst,
  maxPendingJobs: r.max_pending_jobs,
  maxInFlight: r.max_in_flight,
  members: r.members,
  pendingJobs: r.pending_jobs,
});

async function readTenant(db: Parameters<typeof sql.findOperatorTenant>[0], id: string): Promise<OperatorTenant> {
  const row = await sql.findOperatorTenant(db, id);
  if (!row) throw new AppError("not_found", "No such tenant.");
  return view(row);
}

/** Every tenant, by slug, a page at a time (keyset on the unique slug), optionally filtered by slug or name. */
export async function listTenants(deps: OperatorDeps, query: z.output<typeof operatorTenantQuerySchema>) {
  const rows = await sql.listOperatorTenants(deps.prisma, { search: query.search, afterSlug: query.cursor, limit: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  return { data: page.map(view), nextCursor: rows.length > query.limit ? page[page.length - 1]!.slug : null };
}

const operatorActor = (principal: OperatorPrincipal, tenantId: string) => ({ tenantId, actorType: "operator", actorId: principal.actor.id });

/** Sets a tenant's limits; the scheduler and the API read them fresh, so they apply at once. Audited in the tenant's log. */
export async function updateTenantLimits(deps: OperatorDeps, principal: OperatorPrincipal, id: string, input: z.output<typeof updateTenantLimitsSchema>) {
  return prismaTransaction(deps.prisma, async (tx) => {
    const before = await readTenant(tx, id);
    await tx.tenant.update({ where: { id }, data: input });
    const changes = Object.fromEntries(Object.entries(input).map(([k, v]) => [k, { from: before[k as keyof OperatorTenant], to: v }]));
    await writeAudit(tx, { ...operatorActor(principal, id), action: "tenant.limits_changed", targetType: "tenant", targetId: id, details: { operator: principal.email, changes } });
    return readTenant(tx, id);
  });
}

/**
 * Suspends or resumes a tenant. Suspended, its keys and sessions are refused (403 tenant-suspended) and
 * the dispatcher gives it no room, so its due jobs stay scheduled: nothing is lost, and they run when it
 * is resumed. Attempts already running finish. Audited with the operator and the reason.
 */
export async function setTenantSuspended(deps: OperatorDeps, principal: OperatorPrincipal, id: string, suspend: { reason: string } | null) {
  return prismaTransaction(deps.prisma, async (tx) => {
    const before = await readTenant(tx, id);
    if ((before.suspendedAt !== null) === (suspend !== null)) return before; // already so: nothing to record
    await tx.tenant.update({ where: { id }, data: { suspendedAt: suspend ? new Date() : null } });
    await writeAudit(tx, {
      ...operatorActor(principal, id),
      action: suspend ? "tenant.suspended" : "tenant.resumed",
      targetType: "tenant",
      targetId: id,
      details: { operator: principal.email, ...(suspend ? { reason: suspend.reason } : {}) },
    });
    return readTenant(tx, id);
  });
}
