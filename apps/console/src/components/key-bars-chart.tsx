import type { FlowKeyView } from "@tick/contract";

/**
 * The top flow keys as bars on one scale: in flight, then due now, with a tick at each key's concurrency cap.
 * Drawn with plain elements like the console's other bar pictures (StatusBars, the queues' backlog bars):
 * uPlot, the console's chart library, draws time series, not categories. The picture is for the eye; the
 * same figures are written in each key's row under it.
 */
export function KeyBarsChart({ keys, caption }: { keys: FlowKeyView[]; caption: string }) {
  const scale = Math.max(1, ...keys.map((k) => Math.max(k.due + k.inFlight, k.concurrency ?? 0)));
  const pct = (n: number) => `${(n / scale) * 100}%`;
  // Narrow screens put each key's name above its bar; wider ones beside it.
  const grid = "grid grid-cols-[minmax(0,1fr)_5.5rem] items-center gap-x-2 sm:grid-cols-[minmax(0,12rem)_minmax(0,1fr)_6rem]";
  return (
    <figure className="min-w-0" data-testid="flow-key-chart">
      <figcaption className="text-xs text-slate-600">{caption}</figcaption>
      <ul className="mt-1.5 flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-700" aria-label="Chart key">
        <li className="inline-flex items-center gap-1.5"><span aria-hidden="true" className="h-2.5 w-4 rounded-sm bg-indigo-500" />in flight</li>
        <li className="inline-flex items-center gap-1.5"><span aria-hidden="true" className="h-2.5 w-4 rounded-sm bg-amber-500" />due now</li>
        <li className="inline-flex items-center gap-1.5"><span aria-hidden="true" className="h-3 w-0.5 bg-slate-900" />the key&apos;s cap</li>
      </ul>
      <div className="mt-2 space-y-1.5 text-xs" aria-hidden="true">
        <div className={`${grid} text-slate-600`}>
          <span className="hidden sm:block">Key</span>
          <span />
          <span className="text-right">in flight · due</span>
        </div>
        {keys.map((k) => (
          <div key={k.key} className={grid}>
            <span className="col-span-2 truncate font-mono text-slate-800 sm:col-span-1" title={k.key}>{k.key}</span>
            <span className="relative h-3 rounded bg-slate-100">
              <span className="absolute inset-y-0 left-0 flex overflow-hidden rounded" style={{ width: pct(k.inFlight + k.due) }}>
                {k.inFlight > 0 ? <span className="h-full bg-indigo-500" style={{ width: `${(k.inFlight / (k.inFlight + k.due)) * 100}%` }} /> : null}
                {k.due > 0 ? <span className="h-full flex-1 bg-amber-500" /> : null}
              </span>
              {k.concurrency !== null && k.concurrency > 0 ? (
                <span className="absolute -inset-y-0.5 w-0.5 -translate-x-1/2 bg-slate-900" style={{ left: pct(k.concurrency) }} />
              ) : null}
            </span>
            <span className="text-right tabular-nums text-slate-700">{k.inFlight} · {k.due}</span>
          </div>
        ))}
      </div>
    </figure>
  );
}
