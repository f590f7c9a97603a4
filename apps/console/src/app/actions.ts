"use server";

import { revalidatePath } from "next/cache";
import { getAccountDeps } from "@/server/api/deps";
import { getConsoleUser } from "@/server/auth";
import { rememberCurrentTenant } from "@/server/services/accounts";

/** The tenant switcher's action (services/accounts.ts: rememberCurrentTenant). Server actions carry Next's own origin check. */
export async function switchTenant(tenantId: string): Promise<{ ok: boolean }> {
  const user = await getConsoleUser();
  if (!user || !(await rememberCurrentTenant(getAccountDeps(), user, tenantId))) return { ok: false };
  revalidatePath("/", "layout");
  return { ok: true };
}
