import { getServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { changeSchedule, deleteSchedule, getSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await getSchedule(getServiceDeps(), principal.tenant.id, params.id),
}));

export const PATCH = apiRoute("updateSchedule", async ({ principal, params, body }) => ({
  status: 200,
  body: await changeSchedule(getServiceDeps(), principal, params.id, body, "schedule.updated"),
}));

export const DELETE = apiRoute("deleteSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await deleteSchedule(getServiceDeps(), principal, params.id),
}));
