import { getServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { exportFinishedJobs } from "@/server/services/lifecycle";

export const dynamic = "force-dynamic";

export const GET = apiRoute("exportJobs", async ({ principal, query }) => ({
  status: 200,
  body: await exportFinishedJobs(getServiceDeps(), principal, query),
  headers: { "content-type": "application/x-ndjson; charset=utf-8", "content-disposition": 'attachment; filename="jobs.ndjson"' },
}));
