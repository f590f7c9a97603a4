import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { exportFinishedJobs } from "@/server/services/lifecycle";

export const dynamic = "force-dynamic";

export const GET = apiRoute("exportJobs", async ({ principal, query }) => {
  const { pool, logger } = getContext();
  return {
    status: 200,
    body: await exportFinishedJobs(pool, logger, principal, query),
    headers: { "content-type": "application/x-ndjson; charset=utf-8", "content-disposition": 'attachment; filename="jobs.ndjson"' },
  };
});
