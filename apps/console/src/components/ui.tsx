"use client";

import type { ReactNode } from "react";
import { createTickClient, type ApiResult } from "@tick/client";
import type { RouteName } from "@tick/contract";

/** The public API with the signed-in user's session (the cookie goes along; the role gives the scopes). */
export const consoleApi = () => createTickClient({ baseUrl: window.location.origin });

/** A problem from the API, with its field errors (validation_failed, conflict) kept for the form. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields: Record<string, string> = {},
    /** The same errors by their full path ("target.url", "backoff.maxMs"), for forms with nested fields. */
    readonly paths: Record<string, string> = {},
    /** The problem's stable type, e.g. https://tick.dev/problems/target-not-allowed. */
    readonly type?: string,
  ) {
    super(message);
  }
}

/** The body of a successful call; a problem becomes an ApiProblem (react-query's error). */
export async function ok<N extends RouteName>(result: Promise<ApiResult<N>>) {
  const res = await result;
  if (!res.ok) {
    const fields: Record<string, string> = {};
    const paths: Record<string, string> = {};
    for (const e of (res.problem as { errors?: { path: string; message: string }[] }).errors ?? []) {
      fields[e.path.split(".")[0]!] ??= e.message;
      paths[e.path] ??= e.message;
    }
    throw new ApiProblem(res.status, res.problem?.detail ?? res.problem?.title ?? `HTTP ${res.status}`, fields, paths, res.problem?.type);
  }
  return res.body;
}

/** A time as this browser's zone shows it, with the zone named (e.g. "3 Dec 2026, 01:02 UTC"). */
export function formatTime(iso: string | null | undefined, options: { precise?: boolean } = {}): string {
  if (!iso) return "—";
  // dateStyle/timeStyle cannot be combined with timeZoneName: the parts are named one by one.
  return new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short",
    // A job's own times: to the millisecond, where one attempt's start and end are apart by a few.
    ...(options.precise ? { second: "2-digit", fractionalSecondDigits: 3 } : {}),
  }).format(new Date(iso));
}

/** Loading, error and empty states of one query, the same on every page. */
export function QueryState({
  isPending,
  error,
  isEmpty,
  empty,
  retry,
  children,
}: {
  isPending: boolean;
  error: Error | null;
  isEmpty: boolean;
  empty: ReactNode;
  retry: () => void;
  children: ReactNode;
}) {
  if (isPending) {
    return (
      <div role="status" aria-live="polite" className="space-y-2 py-2" data-testid="loading">
        <span className="sr-only">Loading…</span>
        <div className="h-4 w-2/3 animate-pulse rounded bg-slate-200" />
        <div className="h-4 w-1/2 animate-pulse rounded bg-slate-200" />
      </div>
    );
  }
  if (error) {
    return (
      <div role="alert" className="rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-800">
        Could not load this: {error.message}{" "}
        <button type="button" onClick={retry} className="font-medium underline">Try again</button>
      </div>
    );
  }
  if (isEmpty) return <div className="rounded-md border border-dashed border-slate-300 p-4 text-sm text-slate-600" data-testid="empty">{empty}</div>;
  return <>{children}</>;
}

export const buttonClass = "rounded-md border border-slate-300 bg-white px-3 py-1.5 text-sm font-medium hover:bg-slate-50 disabled:cursor-not-allowed disabled:opacity-50";
export const primaryButtonClass = "rounded-md bg-indigo-600 px-3 py-1.5 text-sm font-semibold text-white hover:bg-indigo-500 disabled:cursor-not-allowed disabled:opacity-50";
export const inputClass = "mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 text-sm focus:border-indigo-500 focus:outline-none";

/** The next keyset page of an infinite query, on demand; nothing when there is none. */
export function LoadMore({ query }: { query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => Promise<unknown> } }) {
  if (!query.hasNextPage) return null;
  return (
    <button type="button" className={`${buttonClass} mt-4`} disabled={query.isFetchingNextPage} onClick={() => void query.fetchNextPage()}>
      {query.isFetchingNextPage ? "Loading…" : "Load more"}
    </button>
  );
}

const STATUS_STYLE: Record<string, string> = {
  scheduled: "bg-slate-100 text-slate-800",
  dispatched: "bg-sky-100 text-sky-900",
  running: "bg-indigo-100 text-indigo-900",
  succeeded: "bg-emerald-100 text-emerald-900",
  delivered: "bg-emerald-100 text-emerald-900",
  dead: "bg-red-100 text-red-900",
  failed: "bg-red-100 text-red-900",
  lease_expired: "bg-amber-100 text-amber-900",
  cancelled: "bg-slate-200 text-slate-800",
  discarded: "bg-slate-200 text-slate-800",
  expired: "bg-amber-100 text-amber-900",
  rate_limited: "bg-orange-100 text-orange-900",
  paused: "bg-amber-100 text-amber-900",
  active: "bg-emerald-100 text-emerald-900",
  pending: "bg-sky-100 text-sky-900",
};

/** A job's, attempt's or delivery's status as a small coloured label (the word is always there too). */
export function StatusBadge({ status }: { status: string }) {
  return <span className={`inline-block rounded px-1.5 py-0.5 text-xs font-medium ${STATUS_STYLE[status] ?? "bg-slate-100 text-slate-800"}`} data-status={status}>{status.replace("_", " ")}</span>;
}

/** A form field's error from the API, under the field, tied to it by `id` (use it as aria-describedby). */
export function FieldError({ id, message }: { id: string; message: string | undefined }) {
  return message ? <p id={id} className="mt-1 text-xs text-red-700" data-testid={`error-${id}`}>{message}</p> : null;
}

/** A duration for people: 850 ms, 4.2 s, 3 min 20 s, 2 h 5 min. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}
