"use client";

import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import type { Schedule } from "@tick/contract";
import { buttonClass, consoleApi as api, formatTime, LoadMore, ok, primaryButtonClass, QueryState, StatusBadge } from "@/components/ui";
import { describeCron } from "./schedule-preview";

/** Pause, resume and delete (after a confirmation), the same on the list and on a schedule's page. */
export function ScheduleActions({ schedule, onDeleted }: { schedule: Schedule; onDeleted?: () => void }) {
  const queryClient = useQueryClient();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["schedules"] });
    void queryClient.invalidateQueries({ queryKey: ["schedule", schedule.id] });
  };
  const toggle = useMutation({
    mutationFn: () => ok(schedule.paused ? api().call("resumeSchedule", { params: { id: schedule.id } }) : api().call("pauseSchedule", { params: { id: schedule.id } })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: () => ok(api().call("deleteSchedule", { params: { id: schedule.id } })),
    onSuccess: () => {
      refresh();
      onDeleted?.();
    },
  });
  const error = toggle.error ?? remove.error;
  return (
    <div className="flex flex-col gap-2">
      <div className="flex flex-wrap gap-2">
        <button type="button" className={buttonClass} disabled={toggle.isPending} onClick={() => toggle.mutate()} data-testid={schedule.paused ? "resume-schedule" : "pause-schedule"}>
          {schedule.paused ? "Resume" : "Pause"}<span className="sr-only"> {schedule.name}</span>
        </button>
        <button type="button" className={buttonClass} onClick={() => setConfirmDelete(true)} data-testid="delete-schedule">Delete<span className="sr-only"> {schedule.name}</span></button>
      </div>
      {confirmDelete ? (
        <div role="alertdialog" aria-labelledby={`del-${schedule.id}`} className="rounded-md border border-amber-300 bg-amber-50 p-2 text-sm">
          <p id={`del-${schedule.id}`}>Delete “{schedule.name}”? It will fire no more; the jobs it already created stay.</p>
          <div className="mt-2 flex gap-2">
            <button type="button" className={primaryButtonClass} disabled={remove.isPending} onClick={() => remove.mutate()} data-testid="confirm-delete-schedule">Delete it</button>
            <button type="button" className={buttonClass} onClick={() => setConfirmDelete(false)}>Keep it</button>
          </div>
        </div>
      ) : null}
      {error ? <p role="alert" className="text-sm text-red-800">{error.message}</p> : null}
    </div>
  );
}

export function SchedulesConsole({ canWrite }: { canWrite: boolean }) {
  const schedules = useInfiniteQuery({
    queryKey: ["schedules"],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => ok(api().call("listSchedules", { query: { limit: 50, ...(pageParam ? { cursor: pageParam } : {}) } })),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: 15_000,
  });
  const rows = schedules.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="schedules-heading">
      <div className="mb-4 flex flex-wrap items-center justify-between gap-3">
        <div>
          <h2 id="schedules-heading" className="font-medium">Schedules</h2>
          <p className="text-sm text-slate-600">Recurring jobs: a cron rule read in an IANA zone. Times are in your browser&apos;s zone.</p>
        </div>
        {canWrite ? <Link href="/schedules/new" className={primaryButtonClass}>New schedule</Link> : null}
      </div>
      <QueryState isPending={schedules.isPending} error={schedules.error} isEmpty={rows.length === 0} retry={() => void schedules.refetch()}
        empty={canWrite ? <>No schedules yet. <Link className="underline" href="/schedules/new">Create one</Link>: a cron rule in your zone, with a preview of when it fires.</> : "No schedules yet."}>
        <ul className="divide-y divide-slate-100" data-testid="schedule-list">
          {rows.map((s) => (
            <li key={s.id} className="grid gap-3 py-3 md:grid-cols-[1fr_13rem_auto] md:items-start" data-testid="schedule-row">
              <div className="min-w-0">
                <p className="flex flex-wrap items-center gap-2">
                  <Link href={`/schedules/${s.id}`} className="font-medium text-indigo-700 underline">{s.name}</Link>
                  <StatusBadge status={s.paused ? "paused" : "active"} />
                </p>
                <p className="mt-0.5 break-words text-sm">
                  <code className="text-xs">{s.cron}</code> in {s.timezone}
                  <span className="block text-xs text-slate-600">{describeCron(s.cron) ?? ""} · queue {s.queue}</span>
                </p>
              </div>
              <dl className="grid grid-cols-[4rem_1fr] gap-x-2 text-xs">
                <dt className="text-slate-600">Next</dt><dd data-testid="next-fire">{s.paused ? "paused" : formatTime(s.nextFireAt)}</dd>
                <dt className="text-slate-600">Last</dt><dd data-testid="last-fire">{s.lastFireAt ? formatTime(s.lastFireAt) : "never fired"}</dd>
              </dl>
              {canWrite ? <ScheduleActions schedule={s} /> : null}
            </li>
          ))}
        </ul>
        <LoadMore query={schedules} />
      </QueryState>
    </section>
  );
}
