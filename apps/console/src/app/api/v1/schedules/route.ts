import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getEnv } from "@/server/env";
import { createSchedule, listSchedules } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listSchedules", async ({ principal, query }) => ({
  status: 200,
  body: await listSchedules(getContext().prisma, principal.tenant.id, query.limit, query.cursor),
}));

export const POST = apiRoute("createSchedule", async ({ principal, body }) => ({
  status: 201,
  body: await createSchedule(getContext().pool, getContext().prisma, principal, body, getEnv().TICK_SSRF_ALLOWED_CIDRS),
}));
