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
  ) {
    super(message);
  }
}

/** The body of a successful call; a problem becomes an ApiProblem (react-query's error). */
export async function ok<N extends RouteName>(result: Promise<ApiResult<N>>) {
  const res = await result;
  if (!res.ok) {
    const fields: Record<string, string> = {};
    for (const e of (res.problem as { errors?: { path: string; message: string }[] }).errors ?? []) fields[e.path.split(".")[0]!] ??= e.message;
    throw new ApiProblem(res.status, res.problem?.detail ?? res.problem?.title ?? `HTTP ${res.status}`, fields);
  }
  return res.body;
}

/** A time as this browser's zone shows it, with the zone named (e.g. "3 Dec 2026, 01:02 UTC"). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  // dateStyle/timeStyle cannot be combined with timeZoneName: the parts are named one by one.
  return new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" }).format(new Date(iso));
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
