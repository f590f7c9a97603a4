import type { z } from "zod";
import { AppError } from "@tick/core";
import type { exportJobsQuerySchema } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { writeAudit } from "./audit";
import { attemptView, jobView } from "./views";
import type { TenantServiceDeps } from "./tenant-service-deps";

// Data lifecycle: the NDJSON export of a tenant's finished jobs, whose complete runs retention waits for when
// the tenant asks it to (exportBeforePrune). The retention settings themselves are the Settings page's
// (services/settings.ts).

const EXPORT_PAGE = 500;

/**
 * The tenant's finished jobs that finished in [from, to), with their attempts, as an NDJSON stream read a
 * page at a time (keyset on finish time and id, live and history alike, so a job moving to history
 * meanwhile is neither missed nor repeated). `to` is capped a minute before the database's now. The last
 * line says how many jobs were sent. With `mark` (POST /jobs/export only: a GET never changes state, so a
 * link followed from another site cannot move it), only then is the export recorded (the tenant's export
 * mark, and an audit row), so a stream cut off halfway counts for nothing.
 */
export async function exportFinishedJobs(
  { pool, logger }: TenantServiceDeps,
  principal: ApiPrincipal,
  query: z.output<typeof exportJobsQuerySchema>,
  { mark }: { mark: boolean },
): Promise<ReadableStream<Uint8Array>> {
  const tenantId = principal.tenant.id;
  const horizon = await sql.exportHorizon(pool);
  const from = query.from ? new Date(query.from) : null;
  const to = query.to && Date.parse(query.to) < horizon.getTime() ? new Date(query.to) : horizon;
  if (from && from >= to) {
    throw new AppError("validation_failed", `from must be before ${to.toISOString()} (at most a minute before now).`, {
      extra: { errors: [{ path: "from", message: "not before to" }] },
    });
  }
  const encoder = new TextEncoder();
  const line = (value: unknown) => encoder.encode(JSON.stringify(value) + "\n");
  let after: { at: Date; id: string } | null = null;
  let count = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const jobs = await sql.listFinishedJobs(pool, tenantId, { from, to, after, limit: EXPORT_PAGE });
        if (jobs.length === 0) {
          const exportedThrough = mark ? await markExported(pool, principal, from, to, count) : ((await sql.findTenantSettings(pool, tenantId))?.exported_through ?? null);
          controller.enqueue(line({ type: "end", count, from: from?.toISOString() ?? null, to: to.toISOString(), exportedThrough: exportedThrough?.toISOString() ?? null }));
          controller.close();
          return;
        }
        const attempts = await sql.listAttemptsOfJobs(pool, tenantId, jobs.map((j) => j.id));
        const byJob = new Map<string, sql.AttemptRow[]>();
        for (const a of attempts) byJob.set(a.job_id, [...(byJob.get(a.job_id) ?? []), a]);
        const chunk = jobs.map((j) => JSON.stringify({ type: "job", job: { ...jobView(j), attempts: (byJob.get(j.id) ?? []).map(attemptView) } })).join("\n") + "\n";
        controller.enqueue(encoder.encode(chunk));
        count += jobs.length;
        const last = jobs[jobs.length - 1]!;
        after = { at: last.finished_at!, id: last.id };
      } catch (err) {
        // The client sees the stream end without its end line: the export did not happen.
        logger.error({ err, tenantId }, "job export failed midway");
        controller.error(err);
      }
    },
  });
}

/** A complete export's mark and its audit row, committed together. */
function markExported(pool: TenantServiceDeps["pool"], principal: ApiPrincipal, from: Date | null, to: Date, count: number): Promise<Date | null> {
  const tenantId = principal.tenant.id;
  return inTransaction(pool, async (client) => {
    const through = await sql.recordCompleteExport(client, tenantId, from, to);
    await writeAudit(client, {
      ...auditActor(principal),
      action: "jobs.exported",
      targetType: "tenant",
      targetId: tenantId,
      details: { from: from?.toISOString() ?? null, to: to.toISOString(), count },
    });
    return through;
  });
}
