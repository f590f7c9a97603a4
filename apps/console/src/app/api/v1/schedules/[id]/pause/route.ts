import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getEnv } from "@/server/env";
import { changeSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const POST = apiRoute("pauseSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await changeSchedule(getContext().pool, getContext().prisma, principal, params.id, { paused: true }, "schedule.paused", getEnv().TICK_SSRF_ALLOWED_CIDRS),
}));
