import type { Job } from "@tick/contract";
import { formatDuration } from "./ui";

type Attempt = {
  id: string;
  number: number;
  status: string;
  dispatchedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  leaseExpiresAt: string | null;
  httpStatus: number | null;
};

const BAR: Record<string, string> = {
  succeeded: "#059669",
  failed: "#dc2626",
  lease_expired: "#d97706",
  running: "#4f46e5",
  discarded: "#64748b",
  pending: "#0284c7",
};

const LEFT = 92; // room for the row labels
const WIDTH = 1000;
const ROW = 30;

/**
 * A job's life on one time axis: when it was created, fell due and finished, and for every attempt when
 * it was dispatched (the light bar: waiting for a worker), started and ended (the solid bar, coloured by
 * its outcome), with the lease's end marked on an attempt still running. The table beside it carries the
 * same facts as text, so the picture is never the only way to read them.
 */
export function AttemptTimeline({ job, attempts, now }: { job: Pick<Job, "createdAt" | "dueAt" | "finishedAt" | "status">; attempts: Attempt[]; now: number }) {
  const t = (iso: string | null) => (iso ? Date.parse(iso) : null);
  const points = [t(job.createdAt)!, t(job.dueAt)!, t(job.finishedAt), ...attempts.flatMap((a) => [t(a.dispatchedAt), t(a.startedAt), t(a.finishedAt)])].filter((v): v is number => v !== null);
  const live = !job.finishedAt;
  const start = Math.min(...points);
  const end = Math.max(...points, live ? now : 0, start + 1);
  const span = end - start;
  const x = (ms: number) => LEFT + ((ms - start) / span) * (WIDTH - LEFT - 10);
  const height = ROW * (attempts.length + 1) + 34;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => start + f * span);
  const desc = `From creation to ${job.finishedAt ? "finish" : "now"}: ${formatDuration(span)}. ${attempts.length} attempt${attempts.length === 1 ? "" : "s"}.`;

  return (
    <svg viewBox={`0 0 ${WIDTH} ${height}`} className="h-auto w-full" role="img" aria-labelledby="timeline-title timeline-desc" data-testid="attempt-timeline">
      <title id="timeline-title">Timeline of the job and its attempts</title>
      <desc id="timeline-desc">{desc}</desc>
      {ticks.map((tick, i) => (
        <g key={i}>
          <line x1={x(tick)} x2={x(tick)} y1={4} y2={height - 26} stroke="#e2e8f0" />
          <text x={x(tick)} y={height - 10} fontSize="13" fill="#475569" textAnchor={i === 0 ? "start" : i === ticks.length - 1 ? "end" : "middle"}>
            {i === 0 ? "0" : `+${formatDuration(tick - start)}`}
          </text>
        </g>
      ))}
      <text x={4} y={ROW / 2 + 9} fontSize="14" fill="#0f172a">Job</text>
      <line x1={x(t(job.createdAt)!)} x2={x(t(job.finishedAt) ?? (live ? now : end))} y1={ROW / 2 + 4} y2={ROW / 2 + 4} stroke="#94a3b8" strokeWidth="2" />
      <circle cx={x(t(job.createdAt)!)} cy={ROW / 2 + 4} r="6" fill="#475569"><title>created</title></circle>
      <path d={`M ${x(t(job.dueAt)!)} ${ROW / 2 - 4} l 8 8 l -8 8 l -8 -8 z`} fill="#0284c7"><title>due</title></path>
      {job.finishedAt ? <rect x={x(t(job.finishedAt)!) - 6} y={ROW / 2 - 2} width="12" height="12" fill="#0f172a"><title>finished ({job.status})</title></rect> : null}
      {attempts.map((a, i) => {
        const y = ROW * (i + 1) + 6;
        const dispatched = t(a.dispatchedAt)!;
        const started = t(a.startedAt);
        const finished = t(a.finishedAt);
        const waitEnd = started ?? finished ?? now;
        const runEnd = finished ?? (a.status === "running" ? now : null);
        const lease = a.status === "running" ? t(a.leaseExpiresAt) : null;
        return (
          <g key={a.id} data-testid="timeline-attempt">
            <text x={4} y={y + 15} fontSize="14" fill="#0f172a">#{a.number}</text>
            <rect x={x(dispatched)} y={y + 4} width={Math.max(2, x(waitEnd) - x(dispatched))} height="14" fill="#bae6fd" rx="2">
              <title>dispatched, waiting for a worker: {formatDuration(waitEnd - dispatched)}</title>
            </rect>
            {started !== null && runEnd !== null ? (
              <rect x={x(started)} y={y + 2} width={Math.max(3, x(runEnd) - x(started))} height="18" fill={BAR[a.status] ?? "#64748b"} rx="2">
                <title>{`${a.status.replace("_", " ")}${a.httpStatus ? ` (HTTP ${a.httpStatus})` : ""}: ${formatDuration(runEnd - started)}`}</title>
              </rect>
            ) : null}
            {lease !== null && lease <= end ? <line x1={x(lease)} x2={x(lease)} y1={y} y2={y + 22} stroke="#4f46e5" strokeDasharray="3 2"><title>lease ends</title></line> : null}
          </g>
        );
      })}
    </svg>
  );
}

/** The timeline's key, as text. */
export function TimelineLegend() {
  const item = (color: string, label: string, shape: "bar" | "dot" | "diamond" = "bar") => (
    <li className="inline-flex items-center gap-1.5">
      <span aria-hidden="true" className={shape === "dot" ? "h-2.5 w-2.5 rounded-full" : shape === "diamond" ? "h-2.5 w-2.5 rotate-45" : "h-2.5 w-4 rounded-sm"} style={{ background: color }} />
      {label}
    </li>
  );
  return (
    <ul className="mt-2 flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-700" aria-label="Timeline key">
      {item("#475569", "created", "dot")}
      {item("#0284c7", "due", "diamond")}
      {item("#bae6fd", "waiting for a worker")}
      {item("#059669", "succeeded")}
      {item("#dc2626", "failed")}
      {item("#d97706", "lease expired")}
      {item("#4f46e5", "running")}
    </ul>
  );
}
