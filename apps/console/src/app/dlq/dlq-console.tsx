"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { Job, Replay } from "@tick/contract";
import { consoleApi as api, formatTime, ok, QueryState } from "@/components/ui";

type Filter = { queue?: string; errorKind?: string; dependency?: string; httpStatus?: number };
type Preview = { count: number; wouldTake: number; estimatedSeconds: number; sample: Job[] };

export function DlqConsole({ canReplay }: { canReplay: boolean }) {
  return (
    <div className="space-y-6">
      <ReplayForm canReplay={canReplay} />
      <Replays canReplay={canReplay} />
      <DeadJobs />
    </div>
  );
}

function ReplayForm({ canReplay }: { canReplay: boolean }) {
  const queryClient = useQueryClient();
  const [filter, setFilter] = useState<Filter>({});
  const [rate, setRate] = useState(10);
  const [threshold, setThreshold] = useState(50);
  const [failureWindow, setFailureWindow] = useState(20);
  const [preview, setPreview] = useState<Preview | null>(null);
  const body = (dryRun: boolean) => ({ filter, ratePerSecond: rate, failureThreshold: threshold / 100, failureWindow, dryRun });

  const dryRun = useMutation({
    mutationFn: async () => (await ok(api().call("createDlqReplay", { body: body(true) }))) as Preview,
    onSuccess: setPreview,
  });
  const start = useMutation({
    mutationFn: () => ok(api().call("createDlqReplay", { body: body(false) })),
    onSuccess: () => {
      setPreview(null);
      void queryClient.invalidateQueries({ queryKey: ["replays"] });
      void queryClient.invalidateQueries({ queryKey: ["dlq"] });
    },
  });
  const change = (patch: Filter) => {
    setFilter((f) => ({ ...f, ...patch }));
    setPreview(null); // a new selection needs a new dry run
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    dryRun.mutate();
  };
  const field = "rounded-md border border-slate-300 px-2 py-1 text-sm";

  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5">
      <h2 className="mb-1 font-medium">Replay dead jobs</h2>
      <p className="mb-4 text-sm text-slate-500">
        Dry run first. A replay releases jobs highest priority first at the rate you set, and pauses itself if they keep failing.
      </p>
      <form onSubmit={submit} className="grid grid-cols-2 gap-3 md:grid-cols-6" aria-label="Replay">
        <label className="flex flex-col gap-1 text-xs text-slate-600">Queue
          <input className={field} value={filter.queue ?? ""} onChange={(e) => change({ queue: e.target.value || undefined })} />
        </label>
        <label className="flex flex-col gap-1 text-xs text-slate-600">Error kind
          <input className={field} placeholder="retryable, timeout…" value={filter.errorKind ?? ""} onChange={(e) => change({ errorKind: e.target.value || undefined })} />
        </label>
        <label className="flex flex-col gap-1 text-xs text-slate-600">HTTP status
          <input className={field} inputMode="numeric" value={filter.httpStatus ?? ""} onChange={(e) => change({ httpStatus: e.target.value ? Number(e.target.value) : undefined })} />
        </label>
        <label className="flex flex-col gap-1 text-xs text-slate-600">Dependency
          <input className={field} placeholder="api.example.com" value={filter.dependency ?? ""} onChange={(e) => change({ dependency: e.target.value || undefined })} />
        </label>
        <label className="flex flex-col gap-1 text-xs text-slate-600">Rate (jobs/s)
          <input className={field} type="number" min={0.1} max={1000} step="any" value={rate} onChange={(e) => { setRate(Number(e.target.value)); setPreview(null); }} />
        </label>
        <label className="flex flex-col gap-1 text-xs text-slate-600">Pause above failure %
          <input className={field} type="number" min={0} max={100} value={threshold} onChange={(e) => { setThreshold(Number(e.target.value)); setPreview(null); }} />
        </label>
        <label className="flex flex-col gap-1 text-xs text-slate-600">Judged over the last (jobs)
          <input className={field} type="number" min={1} max={1000} value={failureWindow} onChange={(e) => { setFailureWindow(Number(e.target.value)); setPreview(null); }} />
        </label>
        <div className="col-span-2 flex items-center gap-3 md:col-span-6">
          <button type="submit" disabled={!canReplay || dryRun.isPending}
            title={canReplay ? undefined : "Replaying needs the operator role"}
            className="rounded-md border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-100 disabled:opacity-50">
            Dry run
          </button>
          <button type="button" disabled={!canReplay || !preview || preview.count === 0 || start.isPending} onClick={() => start.mutate()}
            className="rounded-md bg-slate-900 px-3 py-1.5 text-sm text-white hover:bg-slate-700 disabled:opacity-40">
            Start replay
          </button>
          {!canReplay && <span className="text-sm text-slate-500">Viewers can watch replays; replaying needs the operator role.</span>}
          {(dryRun.error ?? start.error) && <span role="alert" className="text-sm text-rose-700">{(dryRun.error ?? start.error)!.message}</span>}
        </div>
      </form>
      {preview && (
        <div className="mt-4 rounded-lg bg-slate-50 p-4 text-sm" data-testid="replay-preview">
          <p>
            <strong>{preview.count}</strong> dead job{preview.count === 1 ? "" : "s"} match
            {preview.wouldTake < preview.count ? ` (this replay takes the first ${preview.wouldTake})` : ""}; about {Math.ceil(preview.estimatedSeconds)} s at {rate}/s.
          </p>
          {preview.sample.length > 0 && (
            <ul className="mt-2 space-y-1 text-xs text-slate-600">
              {preview.sample.map((j) => (
                <li key={j.id} className="font-mono">{j.id.slice(0, 8)} · {j.queue} · priority {j.priority} · {errorText(j.lastError)}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}

const STATUS_STYLE: Record<Replay["status"], string> = {
  running: "bg-sky-100 text-sky-800",
  paused: "bg-slate-200 text-slate-700",
  auto_paused: "bg-amber-100 text-amber-800",
  cancelled: "bg-slate-200 text-slate-600",
  completed: "bg-emerald-100 text-emerald-800",
};

function Replays({ canReplay }: { canReplay: boolean }) {
  const replays = useQuery({
    queryKey: ["replays"],
    queryFn: () => ok(api().call("listDlqReplays", { query: { limit: 10 } })),
    refetchInterval: 1_000,
  });
  const rows = replays.data?.data ?? [];
  return (
    <section className="space-y-3" aria-labelledby="replays">
      <h2 id="replays" className="font-medium">Replays</h2>
      <QueryState isPending={replays.isPending} error={replays.error} isEmpty={rows.length === 0} retry={() => void replays.refetch()}
        empty="No replay yet. A dry run above shows what one would take.">
        {rows.map((r) => <ReplayCard key={r.id} replay={r} canReplay={canReplay} />)}
      </QueryState>
    </section>
  );
}

function ReplayCard({ replay, canReplay }: { replay: Replay; canReplay: boolean }) {
  const queryClient = useQueryClient();
  const act = useMutation({
    mutationFn: (action: "pauseDlqReplay" | "resumeDlqReplay" | "cancelDlqReplay") => ok(api().call(action, { params: { id: replay.id } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["replays"] }),
  });
  const s = replay.status;
  const button = "rounded-md border border-slate-300 px-2.5 py-1 text-xs hover:bg-slate-100 disabled:opacity-40";
  return (
    <article className="rounded-xl border border-slate-200 bg-white p-4" aria-label={`Replay ${replay.id.slice(0, 8)}`} data-replay-id={replay.id}>
      <div className="mb-3 flex flex-col gap-2 sm:flex-row sm:items-center sm:justify-between sm:gap-4">
        <div className="flex flex-wrap items-center gap-x-3 gap-y-1 text-sm">
          <span className={`rounded px-2 py-0.5 text-xs font-medium ${STATUS_STYLE[s]}`} data-testid="replay-status">{s.replace("_", "-")}</span>
          <span className="text-slate-600">{replay.ratePerSecond}/s · pauses above {Math.round(replay.failureThreshold * 100)}% failures of the last {replay.failureWindow}</span>
          <span className="text-slate-600">by {replay.actorName} · {formatTime(replay.createdAt)}</span>
        </div>
        <div className="flex gap-2">
          {s === "running" && <button className={button} disabled={!canReplay || act.isPending} onClick={() => act.mutate("pauseDlqReplay")}>Pause</button>}
          {(s === "paused" || s === "auto_paused") && <button className={button} disabled={!canReplay || act.isPending} onClick={() => act.mutate("resumeDlqReplay")}>Resume</button>}
          {(s === "running" || s === "paused" || s === "auto_paused") && <button className={button} disabled={!canReplay || act.isPending} onClick={() => act.mutate("cancelDlqReplay")}>Cancel</button>}
        </div>
      </div>
      {replay.statusReason && <p role="status" className="mb-3 rounded-md bg-amber-50 p-2 text-sm text-amber-900">{replay.statusReason}</p>}
      {act.error && <p role="alert" className="mb-3 text-sm text-rose-700">{act.error.message}</p>}
      <ReplayProgress progress={replay.progress} />
    </article>
  );
}

const SEGMENTS = [
  { key: "succeeded", label: "succeeded", color: "bg-emerald-500" },
  { key: "failed", label: "failed again", color: "bg-rose-500" },
  { key: "skipped", label: "skipped", color: "bg-slate-400" },
  { key: "inFlight", label: "in flight", color: "bg-violet-500" },
  { key: "remaining", label: "not released", color: "bg-slate-200" },
] as const;

/** One stacked bar: where each of the replay's jobs stands. */
function ReplayProgress({ progress }: { progress: Replay["progress"] }) {
  const total = Math.max(1, progress.total);
  return (
    <div>
      <div className="flex h-3 overflow-hidden rounded bg-slate-100" role="img"
        aria-label={`Replay progress: ${SEGMENTS.map((seg) => `${progress[seg.key]} ${seg.label}`).join(", ")} of ${progress.total}`}>
        {SEGMENTS.map((seg) => (
          <span key={seg.key} className={seg.color} style={{ width: `${(progress[seg.key] / total) * 100}%` }} />
        ))}
      </div>
      <dl className="mt-2 flex flex-wrap gap-x-5 gap-y-1 text-xs text-slate-600">
        {SEGMENTS.map((seg) => (
          <div key={seg.key} className="flex items-center gap-1.5">
            <dt className="flex items-center gap-1.5"><span className={`inline-block h-2 w-2 rounded-sm ${seg.color}`} aria-hidden="true" />{seg.label}</dt>
            <dd className="tabular-nums font-medium text-slate-800" data-progress={seg.key}>{progress[seg.key]}</dd>
          </div>
        ))}
        <div className="flex items-center gap-1.5"><dt>released</dt><dd className="tabular-nums font-medium text-slate-800">{progress.released} / {progress.total}</dd></div>
      </dl>
    </div>
  );
}

function errorText(lastError: unknown): string {
  const e = (lastError ?? {}) as { kind?: string; status?: number | null; message?: string };
  // The HTTP status when there was an answer; otherwise what went wrong (a refused connection, a timeout).
  const what = e.status ? `HTTP ${e.status}` : e.message && e.message !== e.kind ? e.message : null;
  return [e.kind, what].filter(Boolean).join(" · ") || "unknown error";
}

function DeadJobs() {
  const dead = useQuery({
    queryKey: ["dlq"],
    queryFn: () => ok(api().call("listDeadJobs", { query: { limit: 50 } })),
    refetchInterval: 5_000,
  });
  const rows = dead.data?.data ?? [];
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="dead-jobs">
      <h2 id="dead-jobs" className="mb-3 font-medium">Dead jobs</h2>
      <QueryState isPending={dead.isPending} error={dead.error} isEmpty={rows.length === 0} retry={() => void dead.refetch()} empty="The DLQ is empty.">
        {/* A wide table scrolls inside its card on a phone; the page itself never scrolls sideways. */}
        <div className="overflow-x-auto" tabIndex={0} role="region" aria-label="Dead jobs, scrollable">
          <table className="w-full min-w-[40rem] text-left text-sm" aria-label="Dead jobs">
            <thead className="text-xs text-slate-600">
              <tr><th className="py-1">Job</th><th>Queue</th><th>Last error</th><th>Attempts</th><th>Dependency</th><th>Died</th></tr>
            </thead>
            <tbody>
              {rows.map((j) => (
                <tr key={j.id} className="border-t border-slate-100">
                  <td className="py-1.5 font-mono text-xs">{j.id.slice(0, 8)}</td>
                  <td>{j.queue}</td>
                  <td>{errorText(j.lastError)}</td>
                  <td className="tabular-nums">{j.attempts.length}</td>
                  <td className="text-slate-600">{j.dependencyKey ?? "—"}</td>
                  <td className="text-slate-600">{formatTime(j.finishedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </QueryState>
    </section>
  );
}
