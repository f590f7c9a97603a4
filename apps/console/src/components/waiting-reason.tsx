import Link from "next/link";
import type { Waiting, WaitingCode } from "@tick/contract";
import { formatTime } from "./ui";

/** Codes where the job is on its way (due later, being dispatched, with a worker soon): not held by a limit or a pause. */
const ON_ITS_WAY = new Set<WaitingCode>(["not_due", "dispatching", "awaiting_worker"]);

/** The jobs holding the slots this job waits for, as links (key_at_cap names them). */
function InFlightLinks({ ids }: { ids: string[] }) {
  return (
    <>
      {ids.map((jobId, i) => (
        <span key={jobId}>
          {i > 0 ? ", " : null}
          <Link className="whitespace-nowrap text-indigo-700 underline" href={`/jobs/${jobId}`} data-testid="waiting-in-flight-job">job <code>{jobId.slice(0, 8)}</code></Link>
        </span>
      ))}
    </>
  );
}

/**
 * Why a job is not running (GET /jobs/{id}'s `waiting`): the reason in words with its stable code, the cap
 * as a bar with the jobs holding it, and when a rate or a breaker lets it go. `compact` is the jobs list's one line.
 */
export function WaitingReason({ waiting, compact = false }: { waiting: Waiting; compact?: boolean }) {
  const held = !ON_ITS_WAY.has(waiting.code);
  const code = <code className={`rounded px-1 text-xs ${compact ? "bg-slate-100" : "bg-white/70"}`}>{waiting.code}</code>;
  const when = waiting.nextTokenAt
    ? `Next dispatch allowed at ${formatTime(waiting.nextTokenAt, { precise: true })}.`
    : waiting.until && waiting.code !== "not_due"
      ? `Until ${formatTime(waiting.until, { precise: true })}.`
      : null;
  if (compact) {
    return (
      <span className={`block text-xs ${held ? "text-amber-900" : "text-slate-600"}`} data-testid="row-waiting" data-code={waiting.code}>
        Waiting: {waiting.message} {code}
        {waiting.inFlightJobIds?.length ? <> In flight: <InFlightLinks ids={waiting.inFlightJobIds} />.</> : null}
        {when ? <> {when}</> : null}
      </span>
    );
  }
  return (
    <div className={`rounded-md p-3 text-sm ${held ? "bg-amber-50 text-amber-950" : "bg-sky-50 text-sky-950"}`} data-testid="job-waiting" data-code={waiting.code} role="status">
      <p>
        <span className="font-medium">Waiting: </span>
        {waiting.message} {code}
      </p>
      {waiting.cap !== undefined && waiting.inFlight !== undefined ? (
        <div className="mt-2 flex items-center gap-2">
          <span className="flex h-2 w-40 max-w-[50%] overflow-hidden rounded bg-white/80" aria-hidden="true">
            <span className="bg-amber-500" style={{ width: `${Math.min(100, (waiting.inFlight / Math.max(1, waiting.cap)) * 100)}%` }} />
          </span>
          <span className="text-xs" data-testid="waiting-cap">{waiting.inFlight} of {waiting.cap} in flight</span>
        </div>
      ) : null}
      {waiting.inFlightJobIds?.length ? <p className="mt-2 text-xs">In flight now: <InFlightLinks ids={waiting.inFlightJobIds} /></p> : null}
      {when ? <p className="mt-1 text-xs">{when}</p> : null}
    </div>
  );
}
