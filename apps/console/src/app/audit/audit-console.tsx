"use client";

import { useInfiniteQuery } from "@tanstack/react-query";
import { useState } from "react";
import { consoleApi, formatTime, ok, QueryState, LoadMore } from "@/components/ui";

const ACTOR_TYPES = [
  { value: "", label: "Anyone" },
  { value: "user", label: "People" },
  { value: "api_key", label: "API keys" },
  { value: "operator", label: "Platform operators" },
  { value: "system", label: "System" },
];

const TARGET_TYPES = ["", "api_key", "dlq", "dlq_replay", "invitation", "job", "queue", "schedule", "tenant", "user"];

// The actions Tick records, offered as suggestions (any text filters exactly).
const ACTIONS = [
  "api_key.created", "api_key.revoked", "dlq.replay.created", "dlq.replay.dry_run", "dlq.replay.paused", "dlq.replay.resumed",
  "dlq.replay.cancelled", "invitation.revoked", "job.cancel_requested", "job.cancelled", "jobs.exported", "member.added",
  "member.invited", "member.joined", "member.left", "member.removed", "member.role_changed", "queue.created", "queue.paused",
  "queue.resumed", "queue.updated", "schedule.created", "schedule.deleted", "schedule.paused", "schedule.resumed",
  "schedule.updated", "tenant.created", "tenant.limits_changed", "tenant.resumed", "tenant.settings.updated",
  "tenant.suspended", "webhook_secret.rotated",
];

/** A datetime-local value (this browser's zone) as an RFC 3339 instant, or nothing. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

export function AuditConsole() {
  const [actorType, setActorType] = useState("");
  const [action, setAction] = useState("");
  const [targetType, setTargetType] = useState("");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const filter = { actorType, action: action.trim(), targetType, since: instant(since), until: instant(until) };
  const log = useInfiniteQuery({
    queryKey: ["audit", filter],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        consoleApi().call("listAuditLog", {
          query: {
            limit: 50,
            ...(filter.actorType ? { actorType: filter.actorType } : {}),
            ...(filter.action ? { action: filter.action } : {}),
            ...(filter.targetType ? { targetType: filter.targetType } : {}),
            ...(filter.since ? { since: filter.since } : {}),
            ...(filter.until ? { until: filter.until } : {}),
            ...(pageParam ? { cursor: pageParam } : {}),
          },
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const rows = log.data?.pages.flatMap((p) => p.data) ?? [];
  const field = "mt-1 block w-full rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm";
  const filtered = Boolean(actorType || action || targetType || since || until);

  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="audit">
      <h2 id="audit" className="mb-1 font-medium">Audit log</h2>
      <p className="mb-4 text-sm text-slate-600">Every change to this tenant, who made it and when, newest first. Times are in your browser&apos;s zone.</p>
      <form className="mb-4 grid gap-3 sm:grid-cols-2 lg:grid-cols-5" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <label className="text-xs font-medium text-slate-700">Actor
          <select className={field} value={actorType} onChange={(e) => setActorType(e.target.value)}>
            {ACTOR_TYPES.map((a) => <option key={a.value} value={a.value}>{a.label}</option>)}
          </select>
        </label>
        <label className="text-xs font-medium text-slate-700">Action
          <input className={field} list="audit-actions" value={action} onChange={(e) => setAction(e.target.value)} placeholder="e.g. api_key.revoked" />
          <datalist id="audit-actions">{ACTIONS.map((a) => <option key={a} value={a} />)}</datalist>
        </label>
        <label className="text-xs font-medium text-slate-700">Resource
          <select className={field} value={targetType} onChange={(e) => setTargetType(e.target.value)}>
            {TARGET_TYPES.map((t) => <option key={t} value={t}>{t === "" ? "Any" : t}</option>)}
          </select>
        </label>
        <label className="text-xs font-medium text-slate-700">From
          <input type="datetime-local" className={field} value={since} onChange={(e) => setSince(e.target.value)} />
        </label>
        <label className="text-xs font-medium text-slate-700">Until
          <input type="datetime-local" className={field} value={until} onChange={(e) => setUntil(e.target.value)} />
        </label>
      </form>
      <QueryState isPending={log.isPending} error={log.error} isEmpty={rows.length === 0} retry={() => void log.refetch()}
        empty={filtered ? "Nothing matches these filters." : "No changes recorded yet."}>
        <ol className="divide-y divide-slate-100" data-testid="audit-list">
          {rows.map((r) => (
            <li key={r.id} className="grid gap-1 py-3 sm:grid-cols-[12rem_1fr]" data-testid="audit-row">
              <time dateTime={r.createdAt} className="text-xs text-slate-600">{formatTime(r.createdAt)}</time>
              <div className="min-w-0">
                <p className="break-words text-sm">
                  <span className="font-medium" data-testid="audit-actor">{r.actorName}</span>{" "}
                  <code className="rounded bg-slate-100 px-1 text-xs">{r.action}</code>
                  {r.targetType ? <span className="text-slate-600"> · {r.targetType} <code className="text-xs">{r.targetId?.slice(0, 8)}</code></span> : null}
                </p>
                {Object.keys(r.details).length > 0 ? (
                  <details className="mt-1 text-xs text-slate-600">
                    <summary className="cursor-pointer">Details</summary>
                    <pre className="mt-1 max-w-full overflow-x-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2">{JSON.stringify(r.details, null, 2)}</pre>
                  </details>
                ) : null}
              </div>
            </li>
          ))}
        </ol>
        <LoadMore query={log} />
      </QueryState>
    </section>
  );
}
