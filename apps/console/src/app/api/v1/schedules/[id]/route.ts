import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getEnv } from "@/server/env";
import { changeSchedule, deleteSchedule, getSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await getSchedule(getContext().prisma, principal.tenant.id, params.id),
}));

export const PATCH = apiRoute("updateSchedule", async ({ principal, params, body }) => ({
  status: 200,
  body: await changeSchedule(getContext().pool, getContext().prisma, principal, params.id, body, "schedule.updated", getEnv().TICK_SSRF_ALLOWED_CIDRS),
}));

export const DELETE = apiRoute("deleteSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await deleteSchedule(getContext().prisma, principal, params.id),
}));
