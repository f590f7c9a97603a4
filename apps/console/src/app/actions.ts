"use server";

import { revalidatePath } from "next/cache";
import { getConsoleUser } from "@/server/auth";
import { getContext } from "@/server/context";

/**
 * The tenant switcher (issue #19): remembers, on the user's row, which of their tenants the console shows,
 * so it follows them to another browser. Only a tenant they are a member of; the API re-checks the
 * membership on every request anyway. Server actions carry Next's own origin check.
 */
export async function switchTenant(tenantId: string): Promise<{ ok: boolean }> {
  const user = await getConsoleUser();
  if (!user || !user.memberships.some((m) => m.tenantId === tenantId)) return { ok: false };
  await getContext().prisma.user.update({ where: { id: user.id }, data: { currentTenantId: tenantId } });
  revalidatePath("/", "layout");
  return { ok: true };
}
