// "Why is this job waiting?": the reason a due job is not running, decided from the state the claim decides on
// (sql.waitingFacts reads it), in the order the claim applies it: what holds every job of the tenant, of the
// queue, of the key and of the dependency, then the caps and the rates, then the turn.
import type { Waiting } from "@tick/contract";
import type { sql } from "@tick/db";

export interface BreakerFact {
  state: string;
  openUntil: number | null;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** The reason, or null when nothing holds the job (it runs or has ended). */
export function decideWaiting(f: sql.WaitingFacts, breaker: BreakerFact | null): Waiting | null {
  if (f.status === "dispatched") return { code: "awaiting_worker", message: "Dispatched: waiting for a worker to start it." };
  if (f.status !== "scheduled") return null;
  const now = f.now.getTime();
  if (f.due_in_ms > 0) return { code: "not_due", message: "Not due yet.", until: new Date(now + f.due_in_ms).toISOString() };
  const key = f.flow_key === null ? null : `"${f.flow_key}"`;
  if (f.tenant_suspended) return { code: "tenant_suspended", message: "The tenant is suspended by the platform operator: its jobs wait until it is resumed." };
  if (f.queue_paused) return { code: "queue_paused", message: "Its queue is paused." };
  if (key && f.key_paused) return { code: "key_paused", message: `Its flow key ${key} is paused.` };
  if (f.dependency_key && f.dependency_paused) return { code: "dependency_paused", message: `Its dependency ${f.dependency_key} is paused.` };
  if (f.dependency_key && breaker?.state === "open") {
    return {
      code: "breaker_open",
      message: `The circuit breaker of its dependency ${f.dependency_key} is open.`,
      ...(breaker.openUntil !== null ? { until: new Date(breaker.openUntil).toISOString() } : {}),
    };
  }
  if (f.tenant_in_flight >= f.tenant_max_in_flight) {
    return { code: "tenant_at_cap", message: `The tenant is at its in-flight cap (${f.tenant_in_flight} of ${f.tenant_max_in_flight} in flight).`, inFlight: f.tenant_in_flight, cap: f.tenant_max_in_flight };
  }
  if (f.queue_concurrency !== null && f.queue_in_flight >= f.queue_concurrency) {
    return { code: "queue_at_cap", message: `Its queue is at its concurrency (${f.queue_in_flight} of ${f.queue_concurrency} in flight).`, inFlight: f.queue_in_flight, cap: f.queue_concurrency };
  }
  if (key && f.key_cap !== null && f.key_in_flight >= f.key_cap) {
    return {
      code: "key_at_cap",
      message: `Its flow key ${key} is at its concurrency (${f.key_in_flight} of ${f.key_cap} in flight).`,
      inFlight: f.key_in_flight,
      cap: f.key_cap,
      inFlightJobIds: f.key_in_flight_job_ids,
    };
  }
  if (key && f.key_rate_limit !== null && f.key_rate_period_ms !== null && f.key_tokens !== null && f.key_tokens < 1) {
    const nextMs = Math.ceil(((1 - f.key_tokens) * f.key_rate_period_ms) / f.key_rate_limit);
    return {
      code: "key_over_rate",
      message: `Its flow key ${key} used its rate (${f.key_rate_limit} per ${f.key_rate_period_ms} ms); the next dispatch is allowed in ${nextMs} ms.`,
      nextTokenAt: new Date(now + nextMs).toISOString(),
    };
  }
  if (f.queue_rate_per_second !== null) {
    const s = Math.floor(now / 1000);
    const allowance = Math.floor(f.queue_rate_per_second * (s + 1)) - Math.floor(f.queue_rate_per_second * s);
    if (f.queue_window_used >= allowance) {
      return { code: "queue_over_rate", message: `Its queue used this second's rate (${f.queue_rate_per_second}/s).`, nextTokenAt: new Date((s + 1) * 1000).toISOString() };
    }
  }
  if (f.ahead > 0) {
    const n = f.ahead > 10_000 ? "over 10,000 due jobs" : plural(f.ahead, "due job");
    return { code: "fair_share", message: `Waiting for its fair share: ${n} of the tenant were due before it.`, ahead: f.ahead };
  }
  return { code: "dispatching", message: "Due now: the next dispatch round takes it." };
}
