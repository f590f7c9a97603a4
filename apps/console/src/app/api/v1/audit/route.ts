import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listAuditLog } from "@/server/services/audit-log";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listAuditLog", async ({ principal, query }) => ({
  status: 200,
  body: await listAuditLog(getTenantServiceDeps(), principal.tenant.id, query),
}));
