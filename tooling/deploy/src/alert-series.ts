import { LAG_BUCKET_BOUNDS_MS } from "@tick/core";

/**
 * A small simulated Tick deployment that writes the series Prometheus would scrape from it, for promtool's
 * rule unit tests (alert-matrix.ts). Two schedulers hold four shards, two workers run the jobs of three
 * named tenants and "other", calling three dependencies; a console probes the stores as they do. A `Model` says
 * what happens second by second (who is up, who holds which shard, rates, gauges); `seriesOf` turns it into
 * scraped samples the way the processes export them:
 * - a process that is down is not scraped: its series end with a staleness marker, and when it comes back
 *   its counters start again from 0;
 * - unlabelled counters exist from the start; labelled ones (and histograms) appear on their first increment;
 * - the queue gauges are the maintenance loop's per-minute sample, exported by the shard's holder;
 * - a gauge the process removes (a breaker no longer open, a shard given up) ends with a staleness marker.
 */

const STEP_S = 15;
const END_S = 50 * 60;
/** When each incident begins. */
export const T0 = 15 * 60;

export const SCHEDULERS = ["scheduler-1:9464", "scheduler-2:9464"] as const;
export const WORKERS = ["worker-1:9465", "worker-2:9465"] as const;
const CONSOLES = ["console-1:9466"] as const;
type Scheduler = (typeof SCHEDULERS)[number];
type Worker = (typeof WORKERS)[number];
type Console = (typeof CONSOLES)[number];
type Instance = Scheduler | Worker | Console;

export const TENANT_A = "11111111-1111-4111-8111-111111111111";
export const TENANT_B = "22222222-2222-4222-8222-222222222222";
export const TENANT_C = "33333333-3333-4333-8333-333333333333";
export const TENANTS = [TENANT_A, TENANT_B, TENANT_C, "other"] as const;
export type Tenant = (typeof TENANTS)[number];
/** Each tenant's shard (tenants are spread over shards by ID; "other" stands for the unlabelled ones). */
const SHARD_OF: Record<Tenant, number> = { [TENANT_A]: 0, [TENANT_B]: 1, [TENANT_C]: 2, other: 3 };
const SHARDS = [0, 1, 2, 3] as const;

const DEPENDENCIES = ["pay.example", "mail.example", "other"] as const;
export type Dependency = (typeof DEPENDENCIES)[number];

const LOOPS = ["leases", "dispatch", "relay", "reaper", "reconcile", "recurrence", "replay", "maintenance"] as const;
type Loop = (typeof LOOPS)[number];

/** Steps per second each loop finishes when healthy (its interval, or faster while busy). */
const LOOP_RATE: Record<Loop, number> = { leases: 0.2, dispatch: 10, relay: 10, reaper: 0.5, reconcile: 0.2, recurrence: 2, replay: 4, maintenance: 1 };

/** Jobs per second each tenant has falling due (and, when healthy, dispatched and started). */
export const ARRIVALS: Record<Tenant, number> = { [TENANT_A]: 4, [TENANT_B]: 2, [TENANT_C]: 2, other: 1 };

/** SCHEDULER_DISPATCH_RATE of the simulated deployment (jobs/s, shared by the schedulers by shards held). */
const DISPATCH_RATE = 20;

export interface QueueSample {
  waiting: number;
  overdue: number;
  inFlight: number;
  oldestDueAge: number;
  dead: number;
}

interface ReplaySample {
  status: "running" | "paused" | "auto_paused";
  pending: number;
  inFlight: number;
  succeeded: number;
  failed: number;
  failureRatio: number;
}

/** What happens in the deployment at time t (seconds); rates are per second. */
export interface Model {
  /** The process runs (a restart starts its counters again from 0). */
  up(instance: Instance, t: number): boolean;
  /** The process is frozen (SIGSTOP, a long GC pause): not scraped, but its counters go on when it resumes. */
  frozen(instance: Instance, t: number): boolean;
  /** The shards a scheduler believes it holds, with their epochs (tick_shards_held, tick_shard_epoch). */
  held(scheduler: Scheduler, t: number): Record<number, number>;
  loopRuns(scheduler: Scheduler, loop: Loop, outcome: "ok" | "error", t: number): number;
  /** Jobs of the tenant claimed per second (counted by whoever really holds the tenant's shard). */
  dispatched(tenant: Tenant, t: number): number;
  throttled(scheduler: Scheduler, reason: "rate" | "queue_full", t: number): number;
  /** The tenant's queue figures ("default" queue), sampled once a minute. */
  queue(tenant: Tenant, t: number): QueueSample;
  outbox(t: number): { backlog: number; lag: number };
  publishFailures(scheduler: Scheduler, t: number): number;
  reaped(scheduler: Scheduler, decision: "retry" | "dead", t: number): number;
  staleWrites(scheduler: Scheduler, shard: number, t: number): number;
  dueIndex(shard: number, t: number): { mode: number; dueTenants: number; indexTenants: number; polling: number; rebuilds: number };
  replay(tenant: Tenant, t: number): ReplaySample | null;
  storeUp(instance: Instance, store: "database" | "redis", t: number): boolean;
  clockOffset(instance: Instance, t: number): number;
  /** Attempts of the tenant started per second (by the live workers, shared evenly) and their lag (seconds). */
  starts(tenant: Tenant, t: number): number;
  lag(tenant: Tenant, t: number): number;
  calls(dependency: Dependency, result: "healthy" | "unhealthy", t: number): number;
  /** Worst breaker state of the dependency (0 closed, 1 half-open, 2 open); null: no series. */
  breakerState(dependency: Dependency, t: number): number | null;
  /** Open breakers on the dependency (one per tenant); null: none open (no series). */
  breakersOpen(dependency: Dependency, t: number): number | null;
  webhooks(tenant: Tenant, outcome: "delivered" | "retrying" | "failed", t: number): number;
  /** Per worker: completions refused by the fencing token, renewals refused, sends withheld. */
  leaseTrouble(worker: Worker, kind: "late" | "lost" | "withheld", t: number): number;
}

const BASE_QUEUE: Record<Tenant, QueueSample> = {
  [TENANT_A]: { waiting: 240, overdue: 3, inFlight: 8, oldestDueAge: 0.4, dead: 12 },
  [TENANT_B]: { waiting: 120, overdue: 2, inFlight: 4, oldestDueAge: 0.3, dead: 40 },
  [TENANT_C]: { waiting: 120, overdue: 1, inFlight: 4, oldestDueAge: 0.2, dead: 5 },
  other: { waiting: 60, overdue: 1, inFlight: 2, oldestDueAge: 0.3, dead: 3 },
};

const CLOCK_OFFSET: Record<Instance, number> = {
  "scheduler-1:9464": 0.004,
  "scheduler-2:9464": -0.002,
  "worker-1:9465": 0.003,
  "worker-2:9465": 0.001,
  "console-1:9466": -0.001,
};

/** Which dependency each tenant's jobs call, per second (sums to its arrivals). */
export const CALLS: Record<Tenant, Partial<Record<Dependency, number>>> = {
  [TENANT_A]: { "pay.example": 2, other: 2 },
  [TENANT_B]: { "pay.example": 1, "mail.example": 1 },
  [TENANT_C]: { "mail.example": 2 },
  other: { other: 1 },
};

const base: Model = {
  up: () => true,
  frozen: () => false,
  held: (s): Record<number, number> => (s === SCHEDULERS[0] ? { 0: 7, 1: 7 } : { 2: 7, 3: 7 }),
  loopRuns: (_s, loop, outcome) => (outcome === "ok" ? LOOP_RATE[loop] : 0),
  dispatched: (tenant) => ARRIVALS[tenant],
  throttled: () => 0,
  queue: (tenant) => BASE_QUEUE[tenant],
  outbox: () => ({ backlog: 4, lag: 0.3 }),
  publishFailures: () => 0,
  reaped: () => 0,
  staleWrites: () => 0,
  dueIndex: () => ({ mode: 1, dueTenants: 1, indexTenants: 1, polling: 0, rebuilds: 0 }),
  replay: () => null,
  storeUp: () => true,
  clockOffset: (i) => CLOCK_OFFSET[i],
  starts: (tenant) => ARRIVALS[tenant],
  lag: () => 0.08,
  calls: () => 0,
  breakerState: () => 0,
  breakersOpen: () => null,
  webhooks: () => 0,
  leaseTrouble: () => 0,
};

/**
 * The deployment on a good day, with `parts` of it changed by an incident. Unless given, the workers start
 * what is dispatched, the dependencies get the calls of the attempts started (pay.example fails one call a
 * minute) and every started job's webhook is delivered.
 */
export function deployment(parts: Partial<Model> = {}): Model {
  const m: Model = { ...base, ...parts };
  if (!parts.starts) m.starts = (tenant, t) => m.dispatched(tenant, t);
  if (!parts.calls) {
    m.calls = (dependency, result, t) =>
      result === "healthy"
        ? TENANTS.reduce((sum, tenant) => sum + ((CALLS[tenant][dependency] ?? 0) * m.starts(tenant, t)) / ARRIVALS[tenant], 0)
        : dependency === "pay.example"
          ? 1 / 60
          : 0;
  }
  if (!parts.webhooks) m.webhooks = (tenant, outcome, t) => (outcome === "delivered" ? m.starts(tenant, t) : 0);
  return m;
}

export const healthy = deployment();

/** One event every `periodS` seconds from `from` (as a rate: 1/STEP_S in the steps where it happens). */
export function every(periodS: number, from: number, to = Infinity) {
  return (t: number) => (t >= from && t < to && (t - from) % periodS === 0 ? 1 / STEP_S : 0);
}

/** Prometheus' series notation for a label set. */
function selector(name: string, labels: Record<string, string>): string {
  return `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",")}}`;
}

type Sample = number | null;

export interface Series {
  series: string;
  values: string;
}

const TIMES = Array.from({ length: END_S / STEP_S + 1 }, (_, i) => i * STEP_S);

/** The processes' own labels on every series (`app` from the registry, `instance` and `job` from Prometheus). */
function target(instance: Instance): Record<string, string> {
  const app = instance.slice(0, instance.indexOf("-"));
  return { app, instance, job: `tick-${app}` };
}

class Collector {
  readonly series = new Map<string, Sample[]>();

  constructor(private readonly model: Model) {}

  /** A gauge of a process: its value at t, or null when the process does not export it then. */
  gauge(instance: Instance, name: string, labels: Record<string, string>, value: (t: number) => number | null): void {
    const samples = TIMES.map((t) => (this.scraped(instance, t) ? value(t) : null));
    this.add(selector(name, { ...labels, ...target(instance) }), samples);
  }

  /**
   * A counter of a process, from its rate: it starts at 0 with the process (again after a restart) and, when
   * `lazy` (labelled counters, histogram buckets), is exported only from its first increment.
   */
  counter(instance: Instance, name: string, labels: Record<string, string>, rate: (t: number) => number, lazy = true): void {
    let total = 0;
    let wasUp = false;
    const samples = TIMES.map((t, i) => {
      if (!this.model.up(instance, t)) {
        wasUp = false;
        return null;
      }
      if (!wasUp) total = 0;
      else if (!this.model.frozen(instance, TIMES[i - 1]!)) total += rate(TIMES[i - 1]!) * STEP_S;
      wasUp = true;
      return !this.scraped(instance, t) || (lazy && total === 0) ? null : round(total);
    });
    this.add(selector(name, { ...labels, ...target(instance) }), samples);
  }

  private scraped(instance: Instance, t: number): boolean {
    return this.model.up(instance, t) && !this.model.frozen(instance, t);
  }

  private add(key: string, samples: Sample[]): void {
    if (samples.every((s) => s === null)) return;
    const existing = this.series.get(key);
    // Two sources of one series (a shard's figures moving between schedulers) take turns: keep whichever has a value.
    this.series.set(key, existing ? existing.map((s, i) => s ?? samples[i]!) : samples);
  }
}

const round = (v: number) => Math.round(v * 1e6) / 1e6;

/** The queue figures are the maintenance loop's per-minute sample: the value of the minute's start. */
const perMinute = (t: number) => Math.floor(t / 60) * 60;

/** The scheduler that really holds a shard at t: the highest epoch among the live ones that believe so. */
function holderOf(model: Model, shard: number, t: number): Scheduler | null {
  let best: { s: Scheduler; epoch: number } | null = null;
  for (const s of SCHEDULERS) {
    if (!model.up(s, t) || model.frozen(s, t)) continue;
    const epoch = model.held(s, t)[shard];
    if (epoch !== undefined && (!best || epoch > best.epoch)) best = { s, epoch };
  }
  return best?.s ?? null;
}

const LAG_BUCKETS = [...LAG_BUCKET_BOUNDS_MS.map((ms) => ms / 1000), Infinity];

/** Every series the deployment exports under the model, in promtool's input_series notation. */
export function seriesOf(model: Model): Series[] {
  const c = new Collector(model);
  const live = (w: Worker, t: number) => model.up(w, t) && !model.frozen(w, t);
  const share = (w: Worker) => (t: number) => (live(w, t) ? 1 / WORKERS.filter((x) => live(x, t)).length : 0);

  for (const s of SCHEDULERS) {
    c.gauge(s, "tick_shard_count", {}, () => SHARDS.length);
    c.gauge(s, "tick_shards_held", {}, (t) => Object.keys(model.held(s, t)).length);
    c.gauge(s, "tick_dispatch_rate_limit_per_second", {}, (t) => (DISPATCH_RATE * Object.keys(model.held(s, t)).length) / SHARDS.length);
    for (const shard of SHARDS) c.gauge(s, "tick_shard_epoch", { shard: String(shard) }, (t) => model.held(s, t)[shard] ?? null);
    c.counter(s, "tick_shard_lease_renewals_total", {}, (t) => Object.keys(model.held(s, t)).length / 5, false);
    for (const loop of LOOPS) {
      for (const outcome of ["ok", "error"] as const) c.counter(s, "tick_scheduler_loop_runs_total", { loop, outcome }, (t) => model.loopRuns(s, loop, outcome, t));
    }
    for (const tenant of TENANTS) {
      const shard = SHARD_OF[tenant];
      c.counter(s, "tick_dispatched_total", { shard: String(shard), tenant }, (t) => (holderOf(model, shard, t) === s ? model.dispatched(tenant, t) : 0));
      const mine = (t: number) => holderOf(model, shard, t) === s;
      const q = (t: number) => model.queue(tenant, perMinute(t));
      const queueLabels = { tenant, queue: "default" };
      c.gauge(s, "tick_queue_jobs", { ...queueLabels, state: "waiting" }, (t) => (mine(t) ? q(t).waiting : null));
      c.gauge(s, "tick_queue_jobs", { ...queueLabels, state: "overdue" }, (t) => (mine(t) ? q(t).overdue : null));
      c.gauge(s, "tick_queue_jobs", { ...queueLabels, state: "in_flight" }, (t) => (mine(t) ? q(t).inFlight : null));
      c.gauge(s, "tick_queue_oldest_due_age_seconds", queueLabels, (t) => (mine(t) ? q(t).oldestDueAge : null));
      c.gauge(s, "tick_dlq_jobs", queueLabels, (t) => (mine(t) ? q(t).dead : null));
      const r = (t: number) => (mine(t) ? model.replay(tenant, t) : null);
      for (const status of ["running", "paused", "auto_paused"] as const) c.gauge(s, "tick_replays_open", { tenant, status }, (t) => (r(t)?.status === status ? 1 : null));
      for (const [state, key] of [
        ["pending", "pending"],
        ["in_flight", "inFlight"],
        ["succeeded", "succeeded"],
        ["failed", "failed"],
      ] as const) {
        c.gauge(s, "tick_replay_jobs", { tenant, state }, (t) => r(t)?.[key] ?? null);
      }
      c.gauge(s, "tick_replay_failure_ratio", { tenant }, (t) => r(t)?.failureRatio ?? null);
    }
    for (const reason of ["rate", "queue_full"] as const) c.counter(s, "tick_dispatch_throttled_rounds_total", { reason }, (t) => model.throttled(s, reason, t));
    c.gauge(s, "tick_outbox_backlog", {}, (t) => model.outbox(t).backlog);
    c.gauge(s, "tick_outbox_lag_seconds", {}, (t) => model.outbox(t).lag);
    c.counter(s, "tick_outbox_publish_failures_total", {}, (t) => model.publishFailures(s, t), false);
    for (const decision of ["retry", "dead"] as const) c.counter(s, "tick_leases_reaped_total", { decision }, (t) => model.reaped(s, decision, t));
    for (const shard of SHARDS) {
      const mine = (t: number) => holderOf(model, shard, t) === s || (model.held(s, t)[shard] !== undefined && holderOf(model, shard, t) === null);
      const idx = (t: number) => (mine(t) ? model.dueIndex(shard, t) : null);
      c.counter(s, "tick_stale_writes_rejected_total", { shard: String(shard), component: "dispatch" }, (t) => model.staleWrites(s, shard, t));
      c.gauge(s, "tick_due_index_mode", { shard: String(shard) }, (t) => idx(t)?.mode ?? null);
      c.gauge(s, "tick_due_tenants", { shard: String(shard) }, (t) => idx(t)?.dueTenants ?? null);
      c.gauge(s, "tick_due_index_tenants", { shard: String(shard) }, (t) => idx(t)?.indexTenants ?? null);
      c.counter(s, "tick_due_polling_rounds_total", { shard: String(shard) }, (t) => idx(t)?.polling ?? 0);
      c.counter(s, "tick_due_index_rebuilds_total", { shard: String(shard) }, (t) => idx(t)?.rebuilds ?? 0);
    }
  }

  for (const w of WORKERS) {
    const part = share(w);
    for (const tenant of TENANTS) {
      for (const le of LAG_BUCKETS) {
        c.counter(w, "tick_scheduling_lag_seconds_bucket", { tenant, queue: "default", le: le === Infinity ? "+Inf" : String(le) }, (t) =>
          model.lag(tenant, t) <= le ? model.starts(tenant, t) * part(t) : 0,
        );
      }
      for (const outcome of ["delivered", "retrying", "failed"] as const) c.counter(w, "tick_webhook_deliveries_total", { tenant, outcome }, (t) => model.webhooks(tenant, outcome, t) * part(t));
    }
    for (const dependency of DEPENDENCIES) {
      for (const result of ["healthy", "unhealthy"] as const) c.counter(w, "tick_dependency_calls_total", { dependency, result }, (t) => model.calls(dependency, result, t) * part(t));
      c.gauge(w, "tick_breaker_state", { dependency }, (t) => model.breakerState(dependency, t));
      c.gauge(w, "tick_breakers_open", { dependency }, (t) => model.breakersOpen(dependency, t));
    }
    c.counter(w, "tick_late_completions_total", {}, (t) => model.leaseTrouble(w, "late", t), false);
    c.counter(w, "tick_attempt_leases_lost_total", {}, (t) => model.leaseTrouble(w, "lost", t), false);
    c.counter(w, "tick_attempt_sends_withheld_total", {}, (t) => model.leaseTrouble(w, "withheld", t), false);
  }

  for (const i of [...SCHEDULERS, ...WORKERS, ...CONSOLES]) {
    for (const store of ["database", "redis"] as const) c.gauge(i, "tick_store_up", { store }, (t) => (model.storeUp(i, store, t) ? 1 : 0));
    c.gauge(i, "tick_clock_offset_seconds", {}, (t) => model.clockOffset(i, t));
  }

  return [...c.series].map(([series, samples]) => ({ series, values: encode(samples) }));
}

/**
 * promtool's expanding notation: runs of evenly spaced values as `a+bxn` (a, a+b, ..., a+n*b), n missing
 * samples as `_xn`, and `stale` where a series that had a value stops being exported.
 */
function encode(samples: readonly Sample[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < samples.length) {
    const v = samples[i];
    if (v === null || v === undefined) {
      const previous = i > 0 ? samples[i - 1] : null;
      if (previous !== null && previous !== undefined) {
        out.push("stale");
        i++;
        continue;
      }
      let j = i;
      while (j + 1 < samples.length && samples[j + 1] === null) j++;
      out.push(j === i ? "_" : `_x${j - i + 1}`);
      i = j + 1;
      continue;
    }
    let j = i;
    const next = samples[i + 1];
    const step = next === null || next === undefined ? 0 : round(next - v);
    while (j + 1 < samples.length) {
      const a = samples[j]!;
      const b = samples[j + 1];
      if (b === null || b === undefined || Math.abs(b - a - step) > 1e-6) break;
      j++;
    }
    const n = j - i;
    out.push(n === 0 ? num(v) : `${num(v)}${step < 0 ? "-" : "+"}${num(Math.abs(step))}x${n}`);
    i = j + 1;
  }
  return out.join(" ");
}

const num = (v: number) => String(round(v));
