"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type ReactNode } from "react";
import { TERMINAL_STATES } from "@tick/core";
import { AttemptTimeline, TimelineLegend } from "@/components/attempt-timeline";
import { jobQuery, type JobWithAttempts } from "@/components/job-query";
import { WaitingReason } from "@/components/waiting-reason";
import { ApiProblem, buttonClass, consoleApi as api, formatDuration, formatTime, ok, primaryButtonClass, QueryState, StatusBadge } from "@/components/ui";


const FINISHED = new Set<string>(TERMINAL_STATES);

/** What a cancel will do to this job, said before it is done (the API's outcomes, in words). */
function cancelWording(job: JobWithAttempts): string {
  if (job.status === "running")
    return "An attempt is executing now. It cannot be stopped midway: it may still complete, and its side effect may already have happened. No further attempt will be made.";
  if (job.status === "dispatched") return "An attempt was handed to a worker but has not started; it will be discarded, and no attempt will start.";
  if (job.attemptCount > 0)
    return `${job.attemptCount} earlier attempt${job.attemptCount === 1 ? "" : "s"} started and may have had an effect at the target, even if it then failed. No further attempt will start.`;
  return "No attempt has started: the target will never receive this job.";
}

const CANCEL_ANSWER: Record<string, string> = {
  cancelled: "Cancelled. No attempt ever started; the target never received this job.",
  cancelled_after_attempts: "Cancelled. No further attempt will start; the earlier attempts may have had their effect.",
  running: "Cancel recorded. The attempt under way may still complete (its side effect may already have happened); no further attempt will be made.",
};

function excerpt(value: unknown): string | null {
  if (value && typeof value === "object" && "body" in value && typeof (value).body === "string") return (value as { body: string }).body.slice(0, 2048);
  return null;
}

function errorMessage(error: unknown): string | null {
  if (!error || typeof error !== "object") return null;
  const e = error as { kind?: string; message?: string };
  return [e.kind, e.message].filter(Boolean).join(": ") || null;
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <>
      <dt className="text-slate-600">{label}</dt>
      <dd className="min-w-0 break-words">{children}</dd>
    </>
  );
}

export function JobDetail({ id, debounced = false, canWrite }: { id: string; debounced?: boolean; canWrite: boolean }) {
  const job = useQuery({
    ...jobQuery(id),
    // A job still under way is followed live; a finished one stops polling.
    refetchInterval: (q) => (q.state.data && FINISHED.has(q.state.data.status) ? false : 2_000),
    retry: (n, err) => !(err instanceof ApiProblem && (err.status === 404 || err.status === 422)) && n < 2,
  });
  const notFound = job.error instanceof ApiProblem && (job.error.status === 404 || job.error.status === 422);
  return (
    <div className="space-y-6">
      <p className="text-sm"><Link href="/jobs" className="text-indigo-700 underline">← All jobs</Link></p>
      {notFound ? (
        <div className="rounded-md border border-dashed border-slate-300 p-4 text-sm text-slate-700" data-testid="job-not-found">
          There is no job <code className="break-all">{id}</code> in this tenant.
        </div>
      ) : (
        <QueryState isPending={job.isPending} error={job.error} isEmpty={false} empty={null} retry={() => void job.refetch()}>
          {debounced ? (
            <p role="status" className="rounded-md border border-sky-200 bg-sky-50 p-3 text-sm text-sky-950" data-testid="debounced-into">
              Your create was folded into this job by its debounce window
              {job.data?.debounceKey ? <> (<code className="break-all">{job.data.debounceKey}</code>)</> : null}: no second job was made.
            </p>
          ) : null}
          {job.data ? <JobView job={job.data} canWrite={canWrite} /> : null}
        </QueryState>
      )}
    </div>
  );
}

function JobView({ job, canWrite }: { job: JobWithAttempts; canWrite: boolean }) {
  const [now] = useState(() => Date.now());
  const result = excerpt(job.result);
  return (
    <>
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="job-heading">
        <div className="mb-4 flex flex-wrap items-start justify-between gap-3">
          <div className="min-w-0">
            <h2 id="job-heading" className="font-medium">
              Job <code className="break-all text-sm" data-testid="job-id">{job.id}</code>
            </h2>
            <p className="mt-1 flex flex-wrap items-center gap-2 text-sm"><StatusBadge status={job.status} /> <span className="break-all">{job.target.method} {job.target.url}</span></p>
          </div>
          {canWrite ? <JobActions job={job} /> : null}
        </div>
        {job.waiting ? <div className="mb-4"><WaitingReason waiting={job.waiting} /></div> : null}
        <dl className="grid grid-cols-[8.5rem_1fr] gap-x-4 gap-y-1.5 text-sm sm:grid-cols-[8.5rem_1fr_8.5rem_1fr]">
          <Fact label="Queue">{job.queue}</Fact>
          <Fact label="Priority">{job.priority}</Fact>
          <Fact label="Created">{formatTime(job.createdAt, { precise: true })}</Fact>
          <Fact label="Due">{formatTime(job.dueAt, { precise: true })}</Fact>
          <Fact label="Finished">{formatTime(job.finishedAt, { precise: true })}</Fact>
          <Fact label="Attempts">{job.attemptCount} of {job.maxAttempts}</Fact>
          <Fact label="Idempotency key">{job.idempotencyKey ? <code className="break-all text-xs">{job.idempotencyKey}</code> : "—"}</Fact>
          <Fact label="Dependency">{job.dependencyKey ?? "—"}</Fact>
          <Fact label="Flow key">{job.flowKey ? <code className="break-all text-xs" data-testid="job-flow-key">{job.flowKey}</code> : "—"}</Fact>
          {job.debounceKey ? <Fact label="Debounce key"><code className="break-all text-xs" data-testid="job-debounce-key">{job.debounceKey}</code></Fact> : null}
          <Fact label="Trace ID">{job.trace ? <code className="break-all text-xs" title={job.trace.traceparent}>{job.trace.traceId}</code> : "—"}</Fact>
          <Fact label="Expires">{formatTime(job.expiresAt, { precise: true })}</Fact>
          <Fact label="Backoff">{job.backoff.strategy}, {formatDuration(job.backoff.baseMs)} up to {formatDuration(job.backoff.maxMs)}</Fact>
          {job.scheduleId ? <Fact label="Schedule"><Link className="text-indigo-700 underline" href={`/schedules/${job.scheduleId}`}>occurrence of {formatTime(job.occurrenceAt)}</Link></Fact> : null}
          {job.replayId ? <Fact label="Replay"><code className="text-xs">{job.replayId.slice(0, 8)}</code></Fact> : null}
          {job.callbackUrl ? <Fact label="Callback">{job.callbackUrl}</Fact> : null}
        </dl>
        {job.lastError && job.status !== "succeeded" ? <p className="mt-3 rounded-md bg-red-50 p-2 text-sm text-red-900" data-testid="job-last-error">Last error: {errorMessage(job.lastError)}</p> : null}
        {result !== null ? (
          <details className="mt-3 text-sm">
            <summary className="cursor-pointer">Response (excerpt)</summary>
            <pre className="mt-1 max-h-64 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2 text-xs">{result || "(empty body)"}</pre>
          </details>
        ) : null}
      </section>

      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="timeline-heading">
        <h2 id="timeline-heading" className="mb-1 font-medium">Timeline</h2>
        <p className="mb-3 text-sm text-slate-600">Every attempt on one time axis, from the job&apos;s creation to {job.finishedAt ? "its end" : "now"}. Hover a bar for its duration.</p>
        {/* Narrow screens scroll the picture inside its box, not the page. */}
        <div className="overflow-x-auto" tabIndex={0} role="region" aria-label="Timeline picture (scrolls sideways on a narrow screen)"><div className="min-w-[36rem]"><AttemptTimeline job={job} attempts={job.attempts} now={job.finishedAt ? Date.parse(job.finishedAt) : now} /></div></div>
        <TimelineLegend />
      </section>

      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="attempts-heading">
        <h2 id="attempts-heading" className="mb-1 font-medium">Attempts</h2>
        <p className="mb-3 text-sm text-slate-600">
          Each attempt has its own ID (sent as <code>Tick-Attempt-Id</code>) and a fencing token that only grows: a stale attempt&apos;s completion is refused.
        </p>
        {job.attempts.length === 0 ? (
          <p className="rounded-md border border-dashed border-slate-300 p-4 text-sm text-slate-600" data-testid="no-attempts">No attempt yet: the job is waiting for its due time or for room to run.</p>
        ) : (
          <ol className="space-y-3" data-testid="attempt-list">
            {job.attempts.map((a) => {
              const body = excerpt(a.error) ?? (a.status === "succeeded" ? result : null);
              return (
                <li key={a.id} className="rounded-md border border-slate-200 p-3 text-sm" data-testid="attempt-row">
                  <p className="flex flex-wrap items-center gap-2">
                    <span className="font-medium">Attempt {a.number}</span> <StatusBadge status={a.status} />
                    {a.httpStatus ? <span>HTTP {a.httpStatus}</span> : null}
                    {a.durationMs !== null ? <span className="text-slate-600">{formatDuration(a.durationMs)}</span> : null}
                  </p>
                  <dl className="mt-2 grid grid-cols-[8.5rem_1fr] gap-x-4 gap-y-1 sm:grid-cols-[8.5rem_1fr_8.5rem_1fr]">
                    <Fact label="Attempt ID"><code className="break-all text-xs">{a.id}</code></Fact>
                    <Fact label="Fencing token"><code className="text-xs" data-testid="fencing-token">{a.fencingToken}</code></Fact>
                    <Fact label="Worker">{a.workerId ?? "—"}</Fact>
                    <Fact label="Outcome">{a.outcome ?? "—"}</Fact>
                    <Fact label="Dispatched">{formatTime(a.dispatchedAt, { precise: true })}</Fact>
                    <Fact label="Started">{formatTime(a.startedAt, { precise: true })}</Fact>
                    <Fact label="Finished">{formatTime(a.finishedAt, { precise: true })}</Fact>
                    <Fact label="Lease until">{a.status === "running" ? formatTime(a.leaseExpiresAt, { precise: true }) : "—"}</Fact>
                  </dl>
                  {errorMessage(a.error) ? <p className="mt-2 text-red-800">{errorMessage(a.error)}</p> : null}
                  {body !== null ? (
                    <details className="mt-2">
                      <summary className="cursor-pointer text-slate-700">Response body (excerpt)</summary>
                      <pre className="mt-1 max-h-48 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2 text-xs">{body || "(empty body)"}</pre>
                    </details>
                  ) : null}
                </li>
              );
            })}
          </ol>
        )}
      </section>

      <JobDeliveries jobId={job.id} />
    </>
  );
}

function JobActions({ job }: { job: JobWithAttempts }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const [confirm, setConfirm] = useState<"cancel" | "rerun" | null>(null);
  // One key per "run again" intent: a retried click cannot create a second job.
  const [rerunKey, setRerunKey] = useState("");
  const cancel = useMutation({
    mutationFn: () => ok(api().call("cancelJob", { params: { id: job.id } })),
    onSuccess: () => {
      setConfirm(null);
      void queryClient.invalidateQueries({ queryKey: ["job", job.id] });
    },
  });
  const rerun = useMutation({
    mutationFn: () =>
      ok(
        api().call("createJob", {
          idempotencyKey: rerunKey,
          body: {
            queue: job.queue,
            target: { method: job.target.method as "POST", url: job.target.url, headers: job.target.headers, body: job.target.body, timeoutMs: job.target.timeoutMs },
            priority: job.priority,
            maxAttempts: job.maxAttempts,
            backoff: job.backoff,
            ...(job.callbackUrl ? { callbackUrl: job.callbackUrl } : {}),
            ...(job.dependencyKey ? { dependencyKey: job.dependencyKey } : {}),
            ...(job.flowKey ? { flowKey: job.flowKey } : {}),
            metadata: { ...job.metadata, rerunOf: job.id },
          },
        }),
      ),
    onSuccess: (created) => router.push(`/jobs/${created.id}`),
  });
  const cancellable = !FINISHED.has(job.status) && !job.cancelRequestedAt;
  return (
    <div className="flex max-w-md flex-col items-stretch gap-2 sm:items-end">
      <div className="flex flex-wrap gap-2">
        {cancellable ? <button type="button" className={buttonClass} onClick={() => setConfirm("cancel")} data-testid="cancel-job">Cancel…</button> : null}
        <button type="button" className={buttonClass} onClick={() => { setRerunKey(`rerun-${job.id}-${crypto.randomUUID()}`); setConfirm("rerun"); }} data-testid="rerun-job">Run again…</button>
      </div>
      {job.cancelRequestedAt && !FINISHED.has(job.status) ? (
        <p className="text-sm text-amber-900" data-testid="cancel-pending">Cancel requested {formatTime(job.cancelRequestedAt)}: the attempt under way may still complete; no further attempt will be made.</p>
      ) : null}
      {confirm === "cancel" ? (
        <div role="alertdialog" aria-labelledby="confirm-cancel-title" className="rounded-md border border-amber-300 bg-amber-50 p-3 text-sm">
          <p id="confirm-cancel-title" className="font-medium">Cancel this job?</p>
          <p className="mt-1" data-testid="cancel-wording">{cancelWording(job)}</p>
          <div className="mt-2 flex gap-2">
            <button type="button" className={primaryButtonClass} disabled={cancel.isPending} onClick={() => cancel.mutate()} data-testid="confirm-cancel">Cancel the job</button>
            <button type="button" className={buttonClass} onClick={() => setConfirm(null)}>Keep it</button>
          </div>
          {cancel.error ? <p role="alert" className="mt-2 text-red-800">{cancel.error.message}</p> : null}
        </div>
      ) : null}
      {cancel.data && confirm === null ? <p role="status" className="text-sm" data-testid="cancel-answer">{CANCEL_ANSWER[cancel.data.outcome]}</p> : null}
      {confirm === "rerun" ? (
        <div role="alertdialog" aria-labelledby="confirm-rerun-title" className="rounded-md border border-slate-300 bg-slate-50 p-3 text-sm">
          <p id="confirm-rerun-title" className="font-medium">Run this job again?</p>
          <p className="mt-1">A new job with the same target, queue, flow key, retries and metadata is created now, with a new idempotency key (so your endpoint sees it as a new request). This job is not changed.</p>
          <div className="mt-2 flex gap-2">
            <button type="button" className={primaryButtonClass} disabled={rerun.isPending} onClick={() => rerun.mutate()} data-testid="confirm-rerun">Create the new job</button>
            <button type="button" className={buttonClass} onClick={() => setConfirm(null)}>Not now</button>
          </div>
          {rerun.error ? <p role="alert" className="mt-2 text-red-800">{rerun.error.message}</p> : null}
        </div>
      ) : null}
    </div>
  );
}

function JobDeliveries({ jobId }: { jobId: string }) {
  const deliveries = useQuery({ queryKey: ["job-deliveries", jobId], queryFn: () => ok(api().call("listWebhookDeliveries", { query: { jobId, limit: 50 } })) });
  const rows = deliveries.data?.data ?? [];
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading" className="mb-1 font-medium">Webhook deliveries</h2>
      <p className="mb-3 text-sm text-slate-600">The signed completion webhooks of this job, to its callback URL and to the tenant&apos;s endpoints.</p>
      <QueryState isPending={deliveries.isPending} error={deliveries.error} isEmpty={rows.length === 0} retry={() => void deliveries.refetch()}
        empty="No webhook for this job (yet): one is sent when it finishes, if it has a callback URL or the tenant has endpoints.">
        <ul className="divide-y divide-slate-100 text-sm" data-testid="job-deliveries">
          {rows.map((d) => (
            <li key={d.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 py-2">
              <StatusBadge status={d.status} /> <code className="text-xs">{d.event}</code>
              <span className="min-w-0 break-all text-slate-700">{d.url}</span>
              <span className="text-xs text-slate-600">
                {d.tries} tr{d.tries === 1 ? "y" : "ies"}{d.lastStatus ? ` · HTTP ${d.lastStatus}` : ""}{d.lastError ? ` · ${d.lastError}` : ""} · {formatTime(d.deliveredAt ?? d.createdAt)}
              </span>
            </li>
          ))}
        </ul>
      </QueryState>
    </section>
  );
}
