import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { previewSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const GET = apiRoute("previewSchedule", async ({ principal, params, query }) => ({
  status: 200,
  body: await previewSchedule(getTenantServiceDeps(), principal.tenant.id, params.id, query.count, query.after),
}));
