import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { createSchedule, listSchedules } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listSchedules", async ({ principal, query }) => ({
  status: 200,
  body: await listSchedules(getTenantServiceDeps(), principal.tenant.id, query.limit, query.cursor),
}));

export const POST = apiRoute("createSchedule", async ({ principal, body }) => {
  const schedule = await createSchedule(getTenantServiceDeps(), principal, body);
  return { status: 201, body: schedule, headers: { Location: `/api/v1/schedules/${schedule.id}` } };
});
