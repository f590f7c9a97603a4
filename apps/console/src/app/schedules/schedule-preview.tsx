"use client";

import { useQuery } from "@tanstack/react-query";
import cronstrue from "cronstrue";
import { useEffect, useState } from "react";
import { consoleApi as api, ok } from "@/components/ui";

export type Rule = { cron: string; timezone: string; dstGapPolicy: "shift_forward" | "skip"; dstOverlapPolicy: "first" | "last" | "both" };
type Occurrence = { at: string; local: string; nominal: string; offset: string; dst?: "gap_shifted" | "overlap_first" | "overlap_last" };
type Row = Occurrence & { skipped?: boolean };

/** The rule in words ("At 02:30, Monday through Friday"), or null while it is not a valid cron yet. */
export function describeCron(cron: string): string | null {
  try {
    return cronstrue.toString(cron.trim(), { use24HourTimeFormat: true, throwExceptionOnParseError: true, verbose: false });
  } catch {
    return null;
  }
}

/** The value after `ms` of quiet: a preview follows typing without a request per keystroke. */
function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

const wall = (local: string) => local.replace("T", " ").replace(/:00$/, "");

/** What the DST policy did to one occurrence, in words; null when it did nothing. */
function dstNote(row: Row, rule: Rule): string | null {
  if (row.skipped) return `Skipped: ${wall(row.nominal).slice(11)} does not exist that day (clocks spring forward).`;
  if (row.dst === "gap_shifted") return `Moved: ${wall(row.nominal).slice(11)} does not exist that day; fires at ${wall(row.local).slice(11)}.`;
  if (row.dst === "overlap_first") return rule.dstOverlapPolicy === "both" ? `Doubled: first of the two ${wall(row.local).slice(11)}s (${row.offset}).` : `${wall(row.local).slice(11)} happens twice; fires on the first (${row.offset}).`;
  if (row.dst === "overlap_last") return rule.dstOverlapPolicy === "both" ? `Doubled: second of the two ${wall(row.local).slice(11)}s (${row.offset}).` : `${wall(row.local).slice(11)} happens twice; fires on the second (${row.offset}).`;
  return null;
}

/**
 * The next fire times of a rule, saved or not, in its zone and in UTC, with every occurrence the DST policy
 * moved, skipped or doubled marked. A skipped one is found by asking for the same rule with the gap shifted
 * instead: what that answer has and this one lacks is what the skip policy dropped.
 */
export function SchedulePreview({ rule, count = 10 }: { rule: Rule; count?: number }) {
  const [from, setFrom] = useState("");
  const settled = useDebounced({ ...rule, from }, 300);
  const valid = describeCron(settled.cron) !== null && settled.timezone.trim() !== "";
  const preview = useQuery({
    queryKey: ["schedule-preview", settled, count],
    enabled: valid,
    retry: false,
    queryFn: async (): Promise<Row[]> => {
      const after = settled.from ? new Date(`${settled.from}T00:00:00Z`).toISOString() : undefined;
      const body = { cron: settled.cron.trim(), timezone: settled.timezone.trim(), dstGapPolicy: settled.dstGapPolicy, dstOverlapPolicy: settled.dstOverlapPolicy, count, ...(after ? { after } : {}) };
      const fires = (await ok(api().call("previewRule", { body }))).occurrences;
      if (settled.dstGapPolicy !== "skip") return fires;
      const shifted = (await ok(api().call("previewRule", { body: { ...body, dstGapPolicy: "shift_forward" } }))).occurrences;
      const last = fires.length ? Date.parse(fires[fires.length - 1]!.at) : Infinity;
      const skipped = shifted.filter((o) => o.dst === "gap_shifted" && Date.parse(o.at) <= last && !fires.some((f) => f.at === o.at)).map((o) => ({ ...o, skipped: true }));
      return [...fires, ...skipped].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    },
  });

  return (
    <div aria-live="polite" className="@container">
      <div className="mb-2 flex flex-wrap items-end justify-between gap-2">
        <h3 className="text-sm font-semibold">Next {count} fire times</h3>
        <label className="text-xs font-medium text-slate-700">From (UTC date)
          <input type="date" className="ml-2 rounded-md border border-slate-300 px-2 py-1 text-sm" value={from} onChange={(e) => setFrom(e.target.value)} data-testid="preview-from" />
        </label>
      </div>
      {!valid ? (
        <p className="rounded-md border border-dashed border-slate-300 p-3 text-sm text-slate-600">Enter a valid cron rule and zone to see when it fires.</p>
      ) : preview.isPending ? (
        <p role="status" className="text-sm text-slate-600">Working out the fire times…</p>
      ) : preview.error ? (
        <p role="alert" className="rounded-md bg-red-50 p-2 text-sm text-red-800" data-testid="preview-error">{preview.error.message}</p>
      ) : preview.data.length === 0 ? (
        <p className="text-sm text-slate-600">This rule never fires after that date.</p>
      ) : (
        <>
        <p className="hidden gap-x-3 border-b border-slate-200 pb-1 text-xs font-medium text-slate-600 @xl:grid @xl:grid-cols-[10rem_11rem_1fr]" aria-hidden="true">
          <span>Local time ({settled.timezone})</span><span>UTC</span><span>Daylight saving</span>
        </p>
        <ol className="divide-y divide-slate-100 text-sm" data-testid="preview-list">
          {preview.data.map((o) => {
            const note = dstNote(o, settled);
            return (
              <li key={`${o.at}-${o.skipped ? "s" : "f"}`} className={`grid gap-x-3 py-1.5 @xl:grid-cols-[10rem_11rem_1fr] ${o.skipped ? "text-slate-500" : ""}`} data-testid="preview-row" data-dst={o.skipped ? "gap_skipped" : (o.dst ?? "")}>
                <span className={o.skipped ? "line-through" : "font-medium"}>{wall(o.skipped ? o.nominal : o.local)} <span className="text-xs font-normal text-slate-600">{o.skipped ? "" : o.offset}</span></span>
                <span className="text-xs text-slate-600 @xl:text-sm">{o.skipped ? "does not fire" : `${o.at.slice(0, 16).replace("T", " ")} UTC`}</span>
                {note ? <span className="text-xs text-amber-900 @xl:text-sm" data-testid="dst-note">{note}</span> : <span />}
              </li>
            );
          })}
        </ol>
        </>
      )}
    </div>
  );
}
