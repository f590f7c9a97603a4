import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { getJobWithAttempts } from "@/server/services/jobs";
import { attemptView, jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getJob", async ({ principal, params }) => {
  const { row, attempts } = await getJobWithAttempts(getTenantServiceDeps(), principal.tenant.id, params.id);
  return { status: 200, body: { ...jobView(row), attempts: attempts.map(attemptView) } };
});
