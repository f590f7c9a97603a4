import { sql } from "@tick/db";
import { fetchKeysetPage } from "@/server/api/keyset-cursor";
import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { attemptView, jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listDeadJobs", async ({ principal, query }) => {
  const { pool } = getContext();
  const { page, nextCursor } = await fetchKeysetPage(
    query,
    (window) =>
      sql.listDeadJobs(pool, principal.tenant.id, {
        queue: query.queue,
        errorKind: query.errorKind,
        dependency: query.dependency,
        httpStatus: query.httpStatus,
        since: query.since,
        until: query.until,
        ...window,
      }),
    (r) => r.finished_at!, // dead jobs are ordered by when they died
  );
  const attempts = await sql.listAttemptsOfJobs(pool, principal.tenant.id, page.map((r) => r.id));
  return {
    status: 200,
    body: {
      data: page.map((r) => ({ ...jobView(r), attempts: attempts.filter((a) => a.job_id === r.id).map(attemptView) })),
      nextCursor,
    },
  };
});
