import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getEnv } from "@/server/env";
import { getSettings, updateSettings } from "@/server/services/lifecycle";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getSettings", async ({ principal }) => ({
  status: 200,
  body: await getSettings(getContext().pool, principal.tenant.id, getEnv().TICK_RETENTION_MAX_DAYS),
}));

export const PATCH = apiRoute("updateSettings", async ({ principal, body }) => {
  return { status: 200, body: await updateSettings(getContext().pool, principal, body, getEnv().TICK_RETENTION_MAX_DAYS) };
});
