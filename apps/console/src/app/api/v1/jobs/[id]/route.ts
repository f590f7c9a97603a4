import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { waitingReason } from "@/server/services/flow-keys";
import { getJobWithAttempts } from "@/server/services/jobs";
import { attemptView, jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getJob", async ({ principal, params }) => {
  const deps = getTenantServiceDeps();
  const { row, attempts } = await getJobWithAttempts(deps, principal.tenant.id, params.id);
  const waiting = row.status === "scheduled" || row.status === "dispatched" ? await waitingReason(deps, principal.tenant.id, row.id) : null;
  return { status: 200, body: { ...jobView(row), attempts: attempts.map(attemptView), waiting } };
});
