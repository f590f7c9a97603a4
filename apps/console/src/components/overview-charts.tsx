"use client";

import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { TimeSeriesChart, type Series } from "./time-series-chart";
import { consoleApi as api, formatDuration, ok, QueryState } from "./ui";

const WINDOWS = [
  { value: "1h", label: "1 hour" },
  { value: "24h", label: "24 hours" },
  { value: "7d", label: "7 days" },
] as const;
type Window = (typeof WINDOWS)[number]["value"];

const PALETTE = ["#4f46e5", "#0891b2", "#d97706", "#be185d", "#65a30d", "#7c3aed"];
const count = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
const ms = (v: number) => formatDuration(v);
const pct = (v: number) => `${Math.round(v * 100)}%`;

/**
 * The tenant's last hour, day or week as pictures, from the per-minute rollups the scheduler keeps
 * (`GET /api/v1/stats`): jobs finished by outcome, scheduling lag, backlog and oldest due wait per queue,
 * failure rate per dependency, breaker openings, and the DLQ's size.
 */
export function OverviewCharts() {
  const [window, setWindow] = useState<Window>("1h");
  const stats = useQuery({
    queryKey: ["stats", window],
    queryFn: () => ok(api().call("getStats", { query: { window } })),
    refetchInterval: 30_000,
  });
  const charts = useMemo(() => {
    const s = stats.data;
    if (!s) return null;
    const times = s.bins.map((b) => Date.parse(b.at));
    const queues = s.queues;
    type Point = (typeof queues)[number]["points"][number];
    const queueSeries = (pick: (p: Point) => number | null): Series[] =>
      queues.slice(0, PALETTE.length).map((q, i) => ({ label: q.queue, color: PALETTE[i]!, values: q.points.map(pick) }));
    return {
      times,
      finished: [
        { label: "succeeded", color: "#059669", values: s.bins.map((b) => b.succeeded) },
        { label: "dead", color: "#dc2626", values: s.bins.map((b) => b.dead) },
        { label: "cancelled", color: "#64748b", values: s.bins.map((b) => b.cancelled) },
        { label: "expired", color: "#d97706", values: s.bins.map((b) => b.expired) },
      ],
      lag: [
        { label: "p50", color: "#4f46e5", values: s.bins.map((b) => b.lagP50Ms) },
        { label: "p99", color: "#be185d", values: s.bins.map((b) => b.lagP99Ms) },
      ],
      backlog: queueSeries((p) => p.due),
      oldest: queueSeries((p) => p.oldestDueAgeMs),
      failures: s.dependencies.slice(0, PALETTE.length).map((d, i) => ({ label: d.key, color: PALETTE[i]!, values: d.points.map((p) => p.failureRate) })),
      openings: s.breakerOpenings.slice(0, PALETTE.length).map((d, i) => ({ label: d.key, color: PALETTE[i]!, values: d.points.map((p) => p.openings) })),
      dlq: [{ label: "dead jobs", color: "#dc2626", values: s.bins.map((b) => b.dlq) }],
      bin: s.binSeconds,
    };
  }, [stats.data]);
  const per = charts ? (charts.bin === 60 ? "per minute" : `per ${formatDuration(charts.bin * 1000)}`) : "";

  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="overview-heading" data-testid="overview">
      <div className="mb-4 flex flex-wrap items-center justify-between gap-3">
        <div>
          <h2 id="overview-heading" className="font-medium">What happened</h2>
          <p className="text-xs text-slate-600">From the scheduler&apos;s per-minute rollups; a finished job shows here within a few seconds to a minute.</p>
        </div>
        <div role="radiogroup" aria-label="Time window" className="inline-flex overflow-hidden rounded-md border border-slate-300 text-sm">
          {WINDOWS.map((w) => (
            <label key={w.value} className={`cursor-pointer px-3 py-1 ${window === w.value ? "bg-indigo-600 text-white" : "bg-white text-slate-700 hover:bg-slate-50"}`}>
              <input type="radio" name="window" value={w.value} checked={window === w.value} onChange={() => setWindow(w.value)} className="sr-only" />
              {w.label}
            </label>
          ))}
        </div>
      </div>
      <QueryState isPending={stats.isPending} error={stats.error} isEmpty={false} empty={null} retry={() => void stats.refetch()}>
        {charts ? (
          <div className="grid gap-6 lg:grid-cols-2">
            <TimeSeriesChart testId="chart-finished" title="Jobs finished" description={`By outcome, ${per}`} times={charts.times} series={charts.finished} format={count} />
            <TimeSeriesChart testId="chart-lag" title="Scheduling lag" description="Start − due of the finishing attempt, p50 and p99 (histogram bucket bounds)" times={charts.times} series={charts.lag} format={ms} />
            <TimeSeriesChart testId="chart-backlog" title="Due backlog per queue" description="Jobs due and waiting to start" times={charts.times} series={charts.backlog} format={count} />
            <TimeSeriesChart testId="chart-oldest" title="Oldest due wait per queue" description="How long the oldest due job had waited" times={charts.times} series={charts.oldest} format={ms} />
            <TimeSeriesChart testId="chart-failures" title="Failure rate per dependency" description={`Finished jobs that ended dead, ${per} (top 5 dependencies)`} times={charts.times} series={charts.failures} format={pct} />
            <TimeSeriesChart testId="chart-breakers" title="Breaker openings" description={`Times a dependency's circuit breaker opened (its jobs held), ${per}`} times={charts.times} series={charts.openings} format={count} />
            <TimeSeriesChart testId="chart-dlq" title="Dead-letter queue" description="Dead jobs waiting for a replay" times={charts.times} series={charts.dlq} format={count} />
          </div>
        ) : null}
      </QueryState>
    </section>
  );
}
