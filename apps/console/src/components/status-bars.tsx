const COLORS: Record<string, string> = {
  scheduled: "bg-sky-500",
  dispatched: "bg-indigo-500",
  running: "bg-violet-500",
  succeeded: "bg-emerald-500",
  dead: "bg-rose-500",
  cancelled: "bg-slate-400",
  expired: "bg-amber-500",
  rate_limited: "bg-orange-500",
};

/** Horizontal bars of job counts per status, scaled to the largest. */
export function StatusBars({ counts }: { counts: Record<string, number> }) {
  const max = Math.max(1, ...Object.values(counts));
  return (
    <ul className="space-y-2" aria-label="Jobs by status">
      {Object.entries(counts).map(([status, count]) => (
        <li key={status} className="flex items-center gap-3 text-sm">
          <span className="w-24 text-slate-600">{status}</span>
          <span className="h-3 flex-1 rounded bg-slate-100">
            <span className={`block h-3 rounded ${COLORS[status] ?? "bg-slate-500"}`}
              style={{ width: `${(count / max) * 100}%` }} />
          </span>
          <span className="w-16 text-right tabular-nums" data-status={status}>{count}</span>
        </li>
      ))}
    </ul>
  );
}
