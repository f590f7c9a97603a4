import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { listAuditLog } from "@/server/services/audit-log";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listAuditLog", async ({ principal, query }) => ({
  status: 200,
  body: await listAuditLog(getContext().prisma, getContext().pool, principal.tenant.id, query),
}));
