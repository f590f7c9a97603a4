import { sql } from "@tick/db";
import { keysetCursor } from "@/server/api/keyset-cursor";
import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { attemptView, jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listDeadJobs", async ({ principal, query }) => {
  const { pool } = getContext();
  const rows = await sql.listDeadJobs(pool, principal.tenant.id, {
    queue: query.queue,
    errorKind: query.errorKind,
    dependency: query.dependency,
    httpStatus: query.httpStatus,
    since: query.since,
    until: query.until,
    before: query.cursor ? keysetCursor.decode(query.cursor) : undefined,
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  const attempts = await sql.listAttemptsOfJobs(pool, principal.tenant.id, page.map((r) => r.id));
  return {
    status: 200,
    body: {
      data: page.map((r) => ({ ...jobView(r), attempts: attempts.filter((a) => a.job_id === r.id).map(attemptView) })),
      nextCursor: rows.length > query.limit ? keysetCursor.encode(page.at(-1)!.finished_at!, page.at(-1)!.id) : null,
    },
  };
});
