"use client";

import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { JOB_STATUSES, type Job } from "@tick/contract";
import { jobQuery } from "@/components/job-query";
import { WaitingReason } from "@/components/waiting-reason";
import { buttonClass, consoleApi as api, formatTime, LoadMore, ok, primaryButtonClass, QueryState, StatusBadge } from "@/components/ui";

/** Statuses a cancel can still change (the rest have finished). */
const CANCELLABLE = new Set(["scheduled", "dispatched", "running"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STATUS_CHOICES = [{ value: "", label: "Any status" }, { value: "scheduled,dispatched,running", label: "Live (not finished)" }, ...JOB_STATUSES.map((s) => ({ value: s, label: s }))];

/** A datetime-local value (this browser's zone) as an RFC 3339 instant, or nothing. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

/** "POST api.example.com/orders": what a job calls, short enough for a list. */
function targetSummary(target: Job["target"]): string {
  try {
    const u = new URL(target.url);
    return `${target.method} ${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return `${target.method} ${target.url}`;
  }
}

type CancelResult = { id: string; outcome: string };

/** How many waiting rows of the list ask why they wait (a request each per refresh): the first ones on screen. */
const WAITING_ROWS = 10;

/** Whether a row may be held by something other than its due time: due and scheduled, or dispatched. */
const mayBeHeld = (j: Job, now: number) => j.status === "dispatched" || (j.status === "scheduled" && Date.parse(j.dueAt) <= now);

/** Why this listed job waits, live: the job's own reason (the same query as its page, so opening it is instant). */
function RowWaiting({ id, live }: { id: string; live: boolean }) {
  const job = useQuery({ ...jobQuery(id), refetchInterval: live ? 5_000 : false });
  const waiting = job.data?.waiting;
  if (!waiting || waiting.code === "dispatching") return null;
  return <WaitingReason waiting={waiting} compact />;
}

export function JobsConsole({ canWrite }: { canWrite: boolean }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const [status, setStatus] = useState("");
  const [queue, setQueue] = useState("");
  const [dependency, setDependency] = useState("");
  const [flowKey, setFlowKey] = useState("");
  const [idempotencyKey, setIdempotencyKey] = useState("");
  const [search, setSearch] = useState("");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [live, setLive] = useState(true);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const [results, setResults] = useState<CancelResult[]>([]);

  const queues = useQuery({ queryKey: ["queues"], queryFn: () => ok(api().call("listQueues", {})) });
  const filter = { status, queue, dependency: dependency.trim(), flowKey: flowKey.trim(), idempotencyKey, createdAfter: instant(since), createdBefore: instant(until) };
  const jobs = useInfiniteQuery({
    queryKey: ["jobs", filter],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        api().call("listJobs", {
          query: {
            limit: 50,
            ...(filter.status ? { status: filter.status } : {}),
            ...(filter.queue ? { queue: filter.queue } : {}),
            ...(filter.dependency ? { dependency: filter.dependency } : {}),
            ...(filter.flowKey ? { flowKey: filter.flowKey } : {}),
            ...(filter.idempotencyKey ? { idempotencyKey: filter.idempotencyKey } : {}),
            ...(filter.createdAfter ? { createdAfter: filter.createdAfter } : {}),
            ...(filter.createdBefore ? { createdBefore: filter.createdBefore } : {}),
            ...(pageParam ? { cursor: pageParam } : {}),
          },
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // Live: the open list (every page loaded so far) follows what the scheduler does.
    refetchInterval: live ? 5_000 : false,
  });
  const rows = jobs.data?.pages.flatMap((p) => p.data) ?? [];
  // The list's own fetch time as "now": the rows due by then may be held (a cap, a pause, a rate).
  const asked = new Set(rows.filter((j) => mayBeHeld(j, jobs.dataUpdatedAt)).slice(0, WAITING_ROWS).map((j) => j.id));
  const filtered = Boolean(status || queue || dependency || flowKey || idempotencyKey || since || until);
  const chosen = rows.filter((j) => selected.has(j.id) && CANCELLABLE.has(j.status));

  const onSearch = (e: FormEvent) => {
    e.preventDefault();
    const term = search.trim();
    if (UUID.test(term)) router.push(`/jobs/${term.toLowerCase()}`);
    else setIdempotencyKey(term);
  };

  const toggle = (id: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const cancelSelected = async () => {
    setConfirming(false);
    setResults([]);
    const ids = chosen.map((j) => j.id);
    const out: CancelResult[] = [];
    setProgress({ done: 0, total: ids.length });
    // One at a time: each answer is this job's own (cancelled, or running: its attempt may still complete).
    for (const id of ids) {
      const res = await api().call("cancelJob", { params: { id } });
      out.push({ id, outcome: res.ok ? (res.body.outcome === "running" ? "running: the attempt under way may still complete" : res.body.outcome.replaceAll("_", " ")) : `not cancelled: ${res.problem?.detail ?? `HTTP ${res.status}`}` });
      setProgress({ done: out.length, total: ids.length });
    }
    setResults(out);
    setProgress(null);
    setSelected(new Set());
    void queryClient.invalidateQueries({ queryKey: ["jobs"] });
  };

  const field = "mt-1 block w-full rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm";
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="jobs-heading">
      <div className="mb-4 flex flex-wrap items-center justify-between gap-3">
        <div>
          <h2 id="jobs-heading" className="font-medium">Jobs</h2>
          <p className="text-sm text-slate-600">Newest first. Times are in your browser&apos;s zone.</p>
        </div>
        {canWrite ? <Link href="/jobs/new" className={primaryButtonClass}>New job</Link> : null}
      </div>

      <form role="search" className="mb-3 flex flex-wrap gap-2" onSubmit={onSearch} aria-label="Find a job">
        <label className="min-w-0 flex-1 text-xs font-medium text-slate-700">Job ID or idempotency key
          <input className={field} value={search} onChange={(e) => setSearch(e.target.value)} placeholder="e.g. 3f2c… or order-42" data-testid="job-search" />
        </label>
        <button type="submit" className={`${buttonClass} self-end`}>Find</button>
      </form>

      <form className="mb-4 grid gap-3 sm:grid-cols-2 lg:grid-cols-3 xl:grid-cols-6" aria-label="Filter jobs" onSubmit={(e) => e.preventDefault()}>
        <label className="text-xs font-medium text-slate-700">Status
          <select className={field} value={status} onChange={(e) => setStatus(e.target.value)} data-testid="filter-status">
            {STATUS_CHOICES.map((s) => <option key={s.value} value={s.value}>{s.label}</option>)}
          </select>
        </label>
        <label className="text-xs font-medium text-slate-700">Queue
          <select className={field} value={queue} onChange={(e) => setQueue(e.target.value)}>
            <option value="">Any queue</option>
            {(queues.data?.data ?? []).map((q) => <option key={q.name} value={q.name}>{q.name}</option>)}
          </select>
        </label>
        <label className="text-xs font-medium text-slate-700">Dependency
          <input className={field} value={dependency} onChange={(e) => setDependency(e.target.value)} placeholder="e.g. api.example.com" />
        </label>
        <label className="text-xs font-medium text-slate-700">Flow key
          <input className={field} value={flowKey} onChange={(e) => setFlowKey(e.target.value)} placeholder="e.g. customer-42" data-testid="filter-flow-key" />
        </label>
        <label className="text-xs font-medium text-slate-700">Created from
          <input type="datetime-local" className={field} value={since} onChange={(e) => setSince(e.target.value)} />
        </label>
        <label className="text-xs font-medium text-slate-700">Created until
          <input type="datetime-local" className={field} value={until} onChange={(e) => setUntil(e.target.value)} />
        </label>
      </form>

      <div className="mb-3 flex flex-wrap items-center gap-x-4 gap-y-2 text-sm">
        <label className="inline-flex items-center gap-2">
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> Live (refresh every 5 s)
        </label>
        {idempotencyKey ? (
          <span className="rounded bg-slate-100 px-2 py-0.5 text-xs">
            Key <code>{idempotencyKey}</code>{" "}
            <button type="button" className="underline" onClick={() => { setIdempotencyKey(""); setSearch(""); }}>clear</button>
          </span>
        ) : null}
        {canWrite && chosen.length > 0 && !progress ? (
          <button type="button" className={buttonClass} onClick={() => setConfirming(true)} data-testid="bulk-cancel">Cancel {chosen.length} selected</button>
        ) : null}
        {progress ? <span role="status" data-testid="bulk-progress">Cancelling {progress.done} of {progress.total}…</span> : null}
      </div>

      {confirming ? (
        <div role="alertdialog" aria-labelledby="confirm-cancel" className="mb-4 rounded-md border border-amber-300 bg-amber-50 p-3 text-sm">
          <p id="confirm-cancel" className="font-medium">Cancel {chosen.length} job{chosen.length === 1 ? "" : "s"}?</p>
          <p className="mt-1 text-slate-700">
            No new attempt of these jobs will start. A job with an attempt running now cannot be stopped midway: that call may still
            complete, and its side effect may already have happened.
          </p>
          <div className="mt-2 flex gap-2">
            <button type="button" className={primaryButtonClass} onClick={() => void cancelSelected()} data-testid="confirm-bulk-cancel">Cancel them</button>
            <button type="button" className={buttonClass} onClick={() => setConfirming(false)}>Keep them</button>
          </div>
        </div>
      ) : null}

      {results.length > 0 ? (
        <div className="mb-4 rounded-md border border-slate-200 bg-slate-50 p-3 text-sm" role="status" data-testid="bulk-results">
          <p className="font-medium">Cancel results</p>
          <ul className="mt-1 space-y-0.5">
            {results.map((r) => (
              <li key={r.id} className="break-words"><Link className="font-mono text-xs underline" href={`/jobs/${r.id}`}>{r.id.slice(0, 8)}</Link> {r.outcome}</li>
            ))}
          </ul>
        </div>
      ) : null}

      <QueryState isPending={jobs.isPending} error={jobs.error} isEmpty={rows.length === 0} retry={() => void jobs.refetch()}
        empty={filtered ? "No job matches these filters." : canWrite ? <>No jobs yet. <Link className="underline" href="/jobs/new">Create one</Link>, or send one through the API.</> : "No jobs yet."}>
        <ul className="divide-y divide-slate-100" data-testid="job-list">
          {rows.map((j) => (
            <li key={j.id} className="flex items-start gap-3 py-2.5" data-testid="job-row" data-job-id={j.id}>
              {canWrite ? (
                <input type="checkbox" className="mt-1" aria-label={`Select job ${j.id.slice(0, 8)}`} disabled={!CANCELLABLE.has(j.status)}
                  checked={selected.has(j.id)} onChange={() => toggle(j.id)} />
              ) : null}
              <div className="grid min-w-0 flex-1 gap-1 sm:grid-cols-[7rem_6.5rem_1fr_11rem] sm:items-center">
                <Link href={`/jobs/${j.id}`} className="font-mono text-xs text-indigo-700 underline">{j.id.slice(0, 8)}</Link>
                <span><StatusBadge status={j.status} /></span>
                <span className="min-w-0 break-words text-sm">
                  {targetSummary(j.target)}
                  <span className="block text-xs text-slate-600">
                    {j.queue} · attempt {j.attemptCount}/{j.maxAttempts}{j.priority ? ` · priority ${j.priority}` : ""}{j.idempotencyKey ? ` · key ${j.idempotencyKey}` : ""}
                    {j.flowKey ? <> · flow key <code data-testid="row-flow-key">{j.flowKey}</code></> : null}
                    {j.debounceKey ? <> · debounce <code>{j.debounceKey}</code></> : null}
                  </span>
                  {asked.has(j.id) ? <RowWaiting id={j.id} live={live} /> : null}
                </span>
                <span className="text-xs text-slate-600">
                  {j.finishedAt ? <>finished {formatTime(j.finishedAt)}</> : <>due {formatTime(j.dueAt)}</>}
                </span>
              </div>
            </li>
          ))}
        </ul>
        <LoadMore query={jobs} />
      </QueryState>
    </section>
  );
}
