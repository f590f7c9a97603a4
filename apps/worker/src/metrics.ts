import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { LAG_BUCKET_BOUNDS_MS } from "@tick/core";
import { MetricLabels } from "@tick/runtime";
import type { CallSlots } from "./execution/call-slots.js";

/** The scheduling-lag buckets of the console's rollups (core's LAG_BUCKET_BOUNDS_MS), in seconds. */
const LAG_BUCKETS_SECONDS = LAG_BUCKET_BOUNDS_MS.map((ms) => ms / 1000);
/** Webhook delivery lag: from the job's outcome to the delivery, retries included (up to hours). */
const WEBHOOK_LAG_BUCKETS_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600];

/** Breaker states as tick_breaker_state reports them. */
export const BREAKER_STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * The worker's metrics (docs/observability.md lists every one). Tenant, queue and dependency labels go
 * through the process's MetricLabels, so their values are bounded whatever the number of tenants.
 */
export function createWorkerMetrics(registry: Registry, labels: MetricLabels = new MetricLabels()) {
  const breakerOpened = labels.track(
    new Counter({ name: "tick_breaker_opened_total", help: "Times a dependency's circuit breaker opened (dependency down), by dependency", labelNames: ["dependency"], registers: [registry] }),
    "dependency",
  );
  // The attempt runner's two gates (call slots, start slots), read at each scrape: what is held and waiting
  // now, and the running totals whose rates are the mean slots busy and attempts waiting (saturation).
  const gates = new Map<string, CallSlots>();
  /** A counter that follows one of a gate's running totals: each scrape adds what accrued since the last. */
  const totalCounter = (name: string, help: string, total: (t: ReturnType<CallSlots["totals"]>) => number) => {
    const reported = new Map<string, number>();
    return new Counter({
      name,
      help,
      labelNames: ["slot"],
      registers: [registry],
      collect() {
        for (const [slot, gate] of gates) {
          const now = total(gate.totals());
          const accrued = now - (reported.get(slot) ?? 0);
          reported.set(slot, now);
          this.inc({ slot }, Math.max(0, accrued));
        }
      },
    });
  };
  new Gauge({
    name: "tick_worker_slots",
    help: "The worker's attempt slots by slot (call: calls in flight; start: attempts being started or started and waiting for a call) and state (capacity, in_use, waiting: attempts queued for a slot)",
    labelNames: ["slot", "state"],
    registers: [registry],
    collect() {
      for (const [slot, gate] of gates) {
        this.set({ slot, state: "capacity" }, gate.size);
        this.set({ slot, state: "in_use" }, gate.inUse);
        this.set({ slot, state: "waiting" }, gate.waiting);
      }
    },
  });
  totalCounter(
    "tick_worker_slots_busy_seconds_total",
    'Slot-seconds the worker\'s attempt slots were held, by slot; its rate is the mean slots busy (against tick_worker_slots{state="capacity"})',
    (t) => t.busySeconds,
  );
  totalCounter("tick_worker_slots_waiting_seconds_total", "Attempt-seconds spent queued for a slot, by slot; its rate is the mean attempts waiting", (t) => t.waitingSeconds);
  return {
    labels,
    /** Reports a slot gate of the attempt runner under `slot` (call, start). */
    watchSlots: (slot: "call" | "start", gate: CallSlots) => {
      gates.set(slot, gate);
    },
    discarded: new Counter({ name: "tick_messages_discarded_total", help: "Dispatch messages not executed, by reason (cancelled, stale, duplicate, ...)", labelNames: ["reason"], registers: [registry] }),
    completed: new Counter({ name: "tick_attempts_completed_total", help: "Attempts completed, by the job's resulting status", labelNames: ["status"], registers: [registry] }),
    lateCompletions: new Counter({ name: "tick_late_completions_total", help: "Completions refused because the lease had been taken over (duplicate signals)", registers: [registry] }),
    /** The dependency label is bounded here (the attempt runner passes the raw key). */
    breakerOpened: {
      inc: (l: { dependency: string }, value = 1) => breakerOpened.inc({ dependency: labels.dependency(l.dependency, 0) }, value),
    },
    leaseLost: new Counter({ name: "tick_attempt_leases_lost_total", help: "Attempts abandoned because a lease renewal was refused or impossible", registers: [registry] }),
    sendsWithheld: new Counter({
      name: "tick_attempt_sends_withheld_total",
      help: "Attempts given up before their request was sent, because the lease was last renewed too long ago (a frozen or starved worker)",
      registers: [registry],
    }),
    schedulingLag: labels.track(
      new Histogram({
        name: "tick_scheduling_lag_seconds",
        help: "Attempt start minus the job's due time (database clock), per tenant and queue",
        labelNames: ["tenant", "queue"],
        buckets: LAG_BUCKETS_SECONDS,
        registers: [registry],
      }),
      "queue",
    ),
    dependencyCalls: labels.track(
      new Counter({
        name: "tick_dependency_calls_total",
        help: "Calls to job targets as their circuit breaker counts them, by dependency and result (healthy: 2xx-4xx; unhealthy: 5xx, 408, 425, 429, timeouts, network errors)",
        labelNames: ["dependency", "result"],
        registers: [registry],
      }),
      "dependency",
    ),
    breakerState: labels.track(
      new Gauge({
        name: "tick_breaker_state",
        help: "Circuit breaker state per dependency, the worst over the tenants' breakers this worker watches: 0 closed, 1 half-open, 2 open",
        labelNames: ["dependency"],
        registers: [registry],
      }),
      "dependency",
    ),
    breakersOpen: labels.track(
      new Gauge({ name: "tick_breakers_open", help: "Open circuit breakers (one per tenant and dependency), by dependency", labelNames: ["dependency"], registers: [registry] }),
      "dependency",
    ),
    retryBudgetUsed: labels.track(
      new Gauge({
        name: "tick_retry_budget_used_ratio",
        help: "Retries over attempts in the breaker window, the highest over the tenants' breakers of the dependency this worker watches (retries are refused above tick_retry_budget_limit_ratio)",
        labelNames: ["dependency"],
        registers: [registry],
      }),
      "dependency",
    ),
    retryBudgetLimit: new Gauge({ name: "tick_retry_budget_limit_ratio", help: "The retry budget (BREAKER_RETRY_BUDGET): most retries per attempt in a breaker window", registers: [registry] }),
    webhookDeliveries: labels.track(
      new Counter({
        name: "tick_webhook_deliveries_total",
        help: "Webhook delivery tries by tenant and outcome (delivered, retrying: failed and retried later, failed: failed for good, skipped: already settled)",
        labelNames: ["tenant", "outcome"],
        registers: [registry],
      }),
      "tenant",
    ),
    webhookLag: new Histogram({
      name: "tick_webhook_delivery_lag_seconds",
      help: "From a job's outcome (its delivery's creation) to the delivery of its webhook, retries included (database clock)",
      buckets: WEBHOOK_LAG_BUCKETS_SECONDS,
      registers: [registry],
    }),
  };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;
