import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { changeSchedule, deleteSchedule, getSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await getSchedule(getTenantServiceDeps(), principal.tenant.id, params.id),
}));

export const PATCH = apiRoute("updateSchedule", async ({ principal, params, body }) => ({
  status: 200,
  body: await changeSchedule(getTenantServiceDeps(), principal, params.id, body, "schedule.updated"),
}));

export const DELETE = apiRoute("deleteSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await deleteSchedule(getTenantServiceDeps(), principal, params.id),
}));
