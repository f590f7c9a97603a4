"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { ApiProblem, buttonClass, consoleApi as api, formatTime, ok, QueryState, StatusBadge } from "@/components/ui";
import { describeCron, SchedulePreview } from "../schedule-preview";
import { ScheduleActions } from "../schedules-console";
import { ScheduleEditor } from "../schedule-editor";

/** A schedule: its rule in words, what it fires next (DST marked), the jobs it already made, edit. */
export function ScheduleDetail({ id, canWrite }: { id: string; canWrite: boolean }) {
  const router = useRouter();
  const [editing, setEditing] = useState(false);
  const schedule = useQuery({
    queryKey: ["schedule", id],
    queryFn: () => ok(api().call("getSchedule", { params: { id } })),
    refetchInterval: 10_000,
    retry: (n, err) => !(err instanceof ApiProblem && (err.status === 404 || err.status === 422)) && n < 2,
  });
  const past = useQuery({
    queryKey: ["schedule-jobs", id],
    queryFn: () => ok(api().call("listJobs", { query: { scheduleId: id, limit: 10 } })),
    enabled: schedule.isSuccess,
    refetchInterval: 5_000,
  });
  const notFound = schedule.error instanceof ApiProblem && (schedule.error.status === 404 || schedule.error.status === 422);
  const s = schedule.data;
  return (
    <div className="space-y-6">
      <p className="text-sm"><Link href="/schedules" className="text-indigo-700 underline">← All schedules</Link></p>
      {notFound ? (
        <div className="rounded-md border border-dashed border-slate-300 p-4 text-sm text-slate-700" data-testid="schedule-not-found">There is no schedule <code className="break-all">{id}</code> in this tenant.</div>
      ) : (
        <QueryState isPending={schedule.isPending} error={schedule.error} isEmpty={false} empty={null} retry={() => void schedule.refetch()}>
          {s ? (
            <>
              <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="schedule-heading">
                <div className="mb-4 flex flex-wrap items-start justify-between gap-3">
                  <div className="min-w-0">
                    <h2 id="schedule-heading" className="flex flex-wrap items-center gap-2 font-medium">{s.name} <StatusBadge status={s.paused ? "paused" : "active"} /></h2>
                    <p className="mt-1 break-words text-sm"><code>{s.cron}</code> in {s.timezone}: {describeCron(s.cron)}</p>
                  </div>
                  {canWrite ? (
                    <div className="flex flex-col items-start gap-2 sm:items-end">
                      {!editing ? <button type="button" className={buttonClass} onClick={() => setEditing(true)} data-testid="edit-schedule">Edit</button> : null}
                      <ScheduleActions schedule={s} onDeleted={() => router.push("/schedules")} />
                    </div>
                  ) : null}
                </div>
                <dl className="grid grid-cols-[9rem_1fr] gap-x-4 gap-y-1.5 text-sm sm:grid-cols-[9rem_1fr_9rem_1fr]">
                  <dt className="text-slate-600">Next fire</dt><dd>{s.paused ? "paused" : formatTime(s.nextFireAt)}</dd>
                  <dt className="text-slate-600">Last fire</dt><dd data-testid="last-fire">{s.lastFireAt ? formatTime(s.lastFireAt) : "never fired"}</dd>
                  <dt className="text-slate-600">Queue</dt><dd>{s.queue}</dd>
                  <dt className="text-slate-600">Policies</dt><dd>gap {s.dstGapPolicy}, overlap {s.dstOverlapPolicy}, misfire {s.misfirePolicy}</dd>
                  <dt className="text-slate-600">Target</dt><dd className="break-all">{String((s.job as { target?: { method?: string } }).target?.method ?? "")} {String((s.job as { target?: { url?: string } }).target?.url ?? "")}</dd>
                  <dt className="text-slate-600">Flow key</dt><dd className="break-all" data-testid="schedule-flow-key-value">{(s.job as { flowKey?: string }).flowKey ?? "—"}</dd>
                  <dt className="text-slate-600">Created</dt><dd>{formatTime(s.createdAt)}</dd>
                </dl>
              </section>

              {editing ? (
                <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="edit-heading">
                  <h2 id="edit-heading" className="mb-1 font-medium">Edit</h2>
                  <p className="mb-4 text-sm text-slate-600">A changed rule starts from now: occurrences before the change are not run.</p>
                  <ScheduleEditor existing={s} onSaved={() => setEditing(false)} />
                </section>
              ) : (
                <section className="rounded-xl border border-slate-200 bg-white p-5" aria-label="Upcoming fire times">
                  <SchedulePreview rule={s} />
                </section>
              )}

              <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="past-heading">
                <h2 id="past-heading" className="mb-1 font-medium">Previous occurrences</h2>
                <p className="mb-3 text-sm text-slate-600">Each occurrence became one job (its idempotency key is the schedule and the local time), newest first.</p>
                <QueryState isPending={past.isPending} error={past.error} isEmpty={(past.data?.data.length ?? 0) === 0} retry={() => void past.refetch()}
                  empty="No occurrence has fired yet.">
                  <ul className="divide-y divide-slate-100 text-sm" data-testid="past-occurrences">
                    {(past.data?.data ?? []).map((j) => {
                      const occurrence = (j.metadata as { occurrence?: { nominal?: string; dst?: string; coalesced?: number } }).occurrence;
                      return (
                        <li key={j.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 py-2">
                          <span className="font-medium">{formatTime(j.occurrenceAt)}</span>
                          <StatusBadge status={j.status} />
                          <Link className="font-mono text-xs text-indigo-700 underline" href={`/jobs/${j.id}`}>job {j.id.slice(0, 8)}</Link>
                          {occurrence?.dst ? <span className="text-xs text-amber-900">DST: {occurrence.dst.replace("_", " ")}</span> : null}
                          {occurrence?.coalesced ? <span className="text-xs text-slate-600">stands for {occurrence.coalesced} missed</span> : null}
                        </li>
                      );
                    })}
                  </ul>
                </QueryState>
              </section>
            </>
          ) : null}
        </QueryState>
      )}
    </div>
  );
}
