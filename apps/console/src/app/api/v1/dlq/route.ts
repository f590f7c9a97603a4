import { AppError } from "@tick/core";
import { sql } from "@tick/db";
import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { attemptView, jobView } from "@/server/services/views";

export const dynamic = "force-dynamic";

const cursor = {
  encode: (row: sql.JobRow) => Buffer.from(JSON.stringify({ f: row.finished_at!.toISOString(), i: row.id })).toString("base64url"),
  decode: (text: string) => {
    try {
      const { f, i } = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
      if (typeof f === "string" && !Number.isNaN(Date.parse(f)) && typeof i === "string" && /^[0-9a-f-]{36}$/i.test(i)) return { finishedAt: f, id: i };
    } catch {
      // fall through
    }
    throw new AppError("validation_failed", "The cursor is not valid.", { extra: { errors: [{ path: "cursor", message: "invalid cursor" }] } });
  },
};

export const GET = apiRoute("listDeadJobs", async ({ principal, query }) => {
  const { pool } = getContext();
  const rows = await sql.listDeadJobs(pool, principal.tenant.id, {
    queue: query.queue,
    errorKind: query.errorKind,
    dependency: query.dependency,
    httpStatus: query.httpStatus,
    since: query.since,
    until: query.until,
    before: query.cursor ? cursor.decode(query.cursor) : undefined,
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  const attempts = await sql.listAttemptsOfJobs(pool, principal.tenant.id, page.map((r) => r.id));
  return {
    status: 200,
    body: {
      data: page.map((r) => ({ ...jobView(r), attempts: attempts.filter((a) => a.job_id === r.id).map(attemptView) })),
      nextCursor: rows.length > query.limit ? cursor.encode(page[page.length - 1]!) : null,
    },
  };
});
