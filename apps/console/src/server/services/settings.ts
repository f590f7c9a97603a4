import type { z } from "zod";
import { AppError } from "@tick/core";
import type { updateTenantSettingsSchema } from "@tick/contract";
import { inTransaction, sql, type Queryable } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { writeAudit } from "./audit";
import type { TenantServiceDeps } from "./tenant-service-deps";

// The Settings page (/settings) and its API (GET and PATCH /api/v1/settings): the tenant's retention and
// export settings, which admins change, and the limits a platform operator set, which it only shows.

function settingsView(row: sql.TenantSettingsRow, retentionMaxDays: number) {
  return {
    retentionDays: row.retention_days,
    retentionMaxDays,
    dlqRetentionDays: row.dlq_retention_days,
    exportBeforePrune: row.export_before_prune,
    exportedThrough: row.exported_through?.toISOString() ?? null,
  };
}

export async function getSettings({ pool: db, retentionMaxDays }: { pool: Queryable; retentionMaxDays: number }, tenantId: string) {
  const row = await sql.findTenantSettings(db, tenantId);
  if (!row) throw new AppError("not_found", "No such tenant.");
  return settingsView(row, retentionMaxDays);
}

/** Changes retention and export settings within the deployment's ceiling; audited with before and after. */
export async function updateSettings(
  { pool, retentionMaxDays }: TenantServiceDeps,
  principal: ApiPrincipal,
  input: z.output<typeof updateTenantSettingsSchema>,
) {
  if (input.retentionDays !== undefined && input.retentionDays > retentionMaxDays) {
    throw new AppError("validation_failed", `retentionDays may be at most ${retentionMaxDays} (this deployment's ceiling).`, {
      extra: { errors: [{ path: "retentionDays", message: `at most ${retentionMaxDays}` }] },
    });
  }
  // The change and its audit row commit together.
  return inTransaction(pool, async (client) => {
    const before = await getSettings({ pool: client, retentionMaxDays }, principal.tenant.id);
    const row = await sql.updateTenantSettings(client, principal.tenant.id, {
      retentionDays: input.retentionDays ?? null,
      dlqRetentionDays: input.dlqRetentionDays ?? null,
      exportBeforePrune: input.exportBeforePrune ?? null,
    });
    if (!row) throw new AppError("not_found", "No such tenant.");
    const after = settingsView(row, retentionMaxDays);
    await writeAudit(client, { ...auditActor(principal), action: "tenant.settings.updated", targetType: "tenant", targetId: principal.tenant.id, details: { before, after } });
    return after;
  });
}

/** The limits a platform operator set on the tenant, as its Settings page shows them (read only there). */
export async function getTenantLimits({ prisma }: Pick<TenantServiceDeps, "prisma">, tenantId: string) {
  return prisma.tenant.findUniqueOrThrow({
    where: { id: tenantId },
    select: { weight: true, admissionRate: true, admissionBurst: true, maxPendingJobs: true, maxInFlight: true },
  });
}
