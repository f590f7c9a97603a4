import { auditActor } from "@/server/api/authenticate";
import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { writeAudit } from "@/server/services/audit";
import { cancelJob } from "@/server/services/jobs";
import { jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

export const POST = apiRoute("cancelJob", async ({ principal, params }) => {
  const { pool, prisma } = getContext();
  const { outcome, row } = await cancelJob(pool, principal.tenant.id, params.id);
  await writeAudit(prisma, {
    ...auditActor(principal),
    action: outcome === "cancelled" ? "job.cancelled" : "job.cancel_requested",
    targetType: "job",
    targetId: row.id,
  });
  return { status: outcome === "cancelled" ? 200 : 202, body: { outcome, job: jobView(row) } };
});
