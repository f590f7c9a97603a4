import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { cancelJob } from "@/server/services/jobs";
import { jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

export const POST = apiRoute("cancelJob", async ({ principal, params }) => {
  const { status, outcome, attemptsStarted, repeated, row } = await cancelJob(getTenantServiceDeps(), principal, params.id);
  return { status, body: { outcome, attemptsStarted, repeated, job: jobView(row) } };
});
