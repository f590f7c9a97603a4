import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getEnv } from "@/server/env";
import { changeSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const POST = apiRoute("resumeSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await changeSchedule(getContext().pool, getContext().prisma, principal, params.id, { paused: false }, "schedule.resumed", getEnv().TICK_SSRF_ALLOWED_CIDRS),
}));
