"use client";

import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { OperatorTenant } from "@tick/contract";
import { ApiProblem, buttonClass, consoleApi, formatTime, ok, primaryButtonClass, QueryState, LoadMore } from "@/components/ui";

const LIMITS = [
  { key: "weight", label: "Weight", step: "1" },
  { key: "admissionRate", label: "Admission rate (jobs/s)", step: "any" },
  { key: "admissionBurst", label: "Admission burst", step: "1" },
  { key: "maxPendingJobs", label: "Pending-job quota", step: "1" },
  { key: "maxInFlight", label: "In-flight cap", step: "1" },
] as const;

export function OperatorConsole() {
  const [search, setSearch] = useState("");
  const tenants = useInfiniteQuery({
    queryKey: ["operator-tenants", search],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => ok(consoleApi().call("operatorListTenants", { query: { limit: 50, ...(search ? { search } : {}), ...(pageParam ? { cursor: pageParam } : {}) } })),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const rows = tenants.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="tenants">
      <div className="mb-4 flex flex-col gap-3 sm:flex-row sm:items-end sm:justify-between">
        <div>
          <h2 id="tenants" className="font-medium">Tenants</h2>
          <p className="text-sm text-slate-600">Limits apply on the next request and dispatch round. Every change is recorded in the tenant&apos;s audit log.</p>
        </div>
        <label className="text-sm font-medium">
          Search
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="slug or name"
            className="mt-1 block w-full rounded-md border border-slate-300 px-3 py-1.5 text-sm sm:w-64" />
        </label>
      </div>
      <QueryState isPending={tenants.isPending} error={tenants.error} isEmpty={rows.length === 0} empty={search ? "No tenant matches." : "No tenants yet."} retry={() => void tenants.refetch()}>
        <ul className="divide-y divide-slate-100" data-testid="tenant-list">
          {rows.map((t) => <TenantRow key={t.id} tenant={t} />)}
        </ul>
        <LoadMore query={tenants} />
      </QueryState>
    </section>
  );
}

function TenantRow({ tenant: t }: { tenant: OperatorTenant }) {
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ["operator-tenants"] });
  const update = useMutation({
    mutationFn: (body: Record<string, number>) => ok(consoleApi().call("operatorUpdateTenant", { params: { id: t.id }, body })),
    onSuccess: () => {
      setEditing(false);
      refresh();
    },
  });
  const suspend = useMutation({
    mutationFn: (reason: string) => ok(consoleApi().call("operatorSuspendTenant", { params: { id: t.id }, body: { reason } })),
    onSuccess: refresh,
  });
  const resume = useMutation({
    mutationFn: () => ok(consoleApi().call("operatorResumeTenant", { params: { id: t.id } })),
    onSuccess: refresh,
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const body: Record<string, number> = {};
    for (const l of LIMITS) {
      const v = Number(form.get(l.key));
      if (Number.isFinite(v) && v !== t[l.key]) body[l.key] = v;
    }
    if (Object.keys(body).length === 0) setEditing(false);
    else update.mutate(body);
  };
  const error = update.error ?? suspend.error ?? resume.error;
  const fields = update.error instanceof ApiProblem ? update.error.fields : {};
  return (
    <li className="py-4" data-testid="tenant-row">
      <div className="flex flex-col gap-2 sm:flex-row sm:items-start sm:justify-between">
        <div className="min-w-0">
          <p className="flex flex-wrap items-center gap-2">
            <span className="font-medium">{t.name}</span>
            <code className="text-xs text-slate-600">{t.slug}</code>
            {t.suspendedAt ? (
              <span className="rounded bg-red-100 px-1.5 py-0.5 text-xs text-red-800">suspended since {formatTime(t.suspendedAt)}</span>
            ) : (
              <span className="rounded bg-emerald-100 px-1.5 py-0.5 text-xs text-emerald-800">active</span>
            )}
          </p>
          <p className="text-xs text-slate-600">
            {t.members} member{t.members === 1 ? "" : "s"} · {t.pendingJobs.toLocaleString()} pending jobs · created {formatTime(t.createdAt)}
          </p>
          <p className="text-xs text-slate-600">
            weight {t.weight} · admission {t.admissionRate}/s, burst {t.admissionBurst} · quota {t.maxPendingJobs.toLocaleString()} · in flight ≤ {t.maxInFlight}
          </p>
        </div>
        <div className="flex flex-wrap gap-2">
          <button type="button" className={buttonClass} onClick={() => setEditing((e) => !e)} aria-expanded={editing} aria-label={`${editing ? "Close" : "Edit limits"} of ${t.slug}`}>
            {editing ? "Close" : "Edit limits"}
          </button>
          {t.suspendedAt ? (
            <button type="button" className={buttonClass} disabled={resume.isPending} onClick={() => resume.mutate()} aria-label={`Resume ${t.slug}`}>Resume</button>
          ) : (
            <button type="button" className={buttonClass} disabled={suspend.isPending} aria-label={`Suspend ${t.slug}`}
              onClick={() => {
                const reason = window.prompt(`Suspend ${t.slug}? Its keys get 403 and its jobs wait until you resume it. Reason (recorded in its audit log):`);
                if (reason && reason.trim()) suspend.mutate(reason.trim());
              }}>
              Suspend
            </button>
          )}
        </div>
      </div>
      {error ? <p role="alert" className="mt-2 text-sm text-red-700">{error.message}</p> : null}
      {editing ? (
        <form onSubmit={submit} className="mt-3 grid gap-3 sm:grid-cols-2 lg:grid-cols-5" aria-label={`Limits of ${t.slug}`}>
          {LIMITS.map((l) => (
            <label key={l.key} className="block text-xs font-medium text-slate-700">
              {l.label}
              <input name={l.key} type="number" step={l.step} min={l.key === "admissionRate" ? 0.1 : 1} defaultValue={t[l.key]} required
                className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1 text-sm" />
              {fields[l.key] ? <span className="mt-1 block text-xs text-red-700">{fields[l.key]}</span> : null}
            </label>
          ))}
          <div className="sm:col-span-2 lg:col-span-5">
            <button type="submit" className={primaryButtonClass} disabled={update.isPending}>{update.isPending ? "Saving…" : "Save limits"}</button>
          </div>
        </form>
      ) : null}
    </li>
  );
}
