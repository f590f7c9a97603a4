import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { exportFinishedJobs } from "@/server/services/lifecycle";

export const dynamic = "force-dynamic";

const ndjson = { "content-type": "application/x-ndjson; charset=utf-8", "content-disposition": 'attachment; filename="jobs.ndjson"' };

/** Read only: streams the export and leaves the tenant's export mark as it is. */
export const GET = apiRoute("exportJobs", async ({ principal, query }) => ({
  status: 200,
  body: await exportFinishedJobs(getTenantServiceDeps(), principal, query, { mark: false }),
  headers: ndjson,
}));

/** Streams the export and, once complete, moves the tenant's export mark (a state change, so never a GET). */
export const POST = apiRoute("exportJobsAndMark", async ({ principal, query }) => ({
  status: 200,
  body: await exportFinishedJobs(getTenantServiceDeps(), principal, query, { mark: true }),
  headers: ndjson,
}));
