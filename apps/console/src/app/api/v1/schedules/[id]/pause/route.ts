import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { changeSchedule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const POST = apiRoute("pauseSchedule", async ({ principal, params }) => ({
  status: 200,
  body: await changeSchedule(getTenantServiceDeps(), principal, params.id, { paused: true }, "schedule.paused"),
}));
