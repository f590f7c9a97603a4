import { stringify } from "yaml";
import {
  ARRIVALS,
  CALLS,
  deployment,
  every,
  healthy,
  SCHEDULERS,
  seriesOf,
  T0,
  TENANT_A,
  TENANT_B,
  TENANT_C,
  TENANTS,
  WORKERS,
  type Model,
  type QueueSample,
  type Tenant,
} from "./alert-series.js";

/**
 * The incidents of the alert matrix: each one's synthetic series (alert-series.ts) and the
 * alerts it must fire; every other alert must stay silent throughout it. `alertTests` writes them as
 * promtool's rule unit tests (prometheus.test.ts runs them).
 */

interface Firing {
  alert: string;
  /** Seconds from the start of the series. */
  at: number;
  /** The labels of the firing alert besides the rule's own (severity, incident, scenario). */
  labels: Record<string, string>;
  summary: string;
  description: string;
}

export interface Incident {
  name: string;
  model: Model;
  fires: Firing[];
}

const S1 = SCHEDULERS[0];
const S2 = SCHEDULERS[1];
const W1 = WORKERS[0];
const W2 = WORKERS[1];
const min = (m: number) => m * 60;

/** Each silent alert is checked this often, from a minute before the incident to its end. */
const QUIET_CHECKS = [T0 - min(1), T0 + min(2), T0 + min(5), T0 + min(10), T0 + min(20), T0 + min(30)];

const BASE = (tenant: Tenant, t: number) => healthy.queue(tenant, t);

/** A tenant's due jobs pile up at `rate` per second from `from`: overdue, waiting and the oldest's wait grow. */
function piling(tenant: Tenant, t: number, from: number, rate: number): QueueSample {
  const q = BASE(tenant, t);
  if (t < from || rate === 0) return q;
  const d = t - from;
  return { ...q, waiting: q.waiting + rate * d, overdue: q.overdue + rate * d, oldestDueAge: Math.max(q.oldestDueAge, d) };
}

/** Claims go on until SCHEDULER_MAX_QUEUED_PER_SHARD unstarted attempts (500 here) wait in each of the 4 shards. */
const QUEUE_FULL_AT = T0 + Math.ceil(2000 / 9 / 15) * 15;

/** No attempt starts from `from` (the workers get no message): dispatch fills the shards' queues, then holds. */
const nothingStarts = (from: number): Partial<Model> => ({
  starts: (tenant, t) => (t >= from ? 0 : ARRIVALS[tenant]),
  dispatched: (tenant, t) => (t >= QUEUE_FULL_AT ? 0 : ARRIVALS[tenant]),
  throttled: (_s, reason, t) => (reason === "queue_full" && t >= QUEUE_FULL_AT ? 5 : 0),
  queue: (tenant, t) => {
    const q = piling(tenant, t, QUEUE_FULL_AT, ARRIVALS[tenant]);
    return t >= T0 ? { ...q, inFlight: q.inFlight + ARRIVALS[tenant] * (Math.min(t, QUEUE_FULL_AT) - T0) } : q;
  },
});

// --- S11: pay.example fails from T0; the breakers of A and B (its two callers) open a minute later.
const BREAKERS_OPEN = T0 + 60;
/** One scrape in eight sees a breaker half-open for its probe (every BREAKER_OPEN_FOR, 30 s). */
const probing = (t: number) => t >= BREAKERS_OPEN && (t - BREAKERS_OPEN) % 120 === 105;
const heldPay = (tenant: Tenant, t: number) => (t >= BREAKERS_OPEN ? (CALLS[tenant]["pay.example"] ?? 0) : 0);
const dependencyOutage: Partial<Model> = {
  dispatched: (tenant, t) => ARRIVALS[tenant] - heldPay(tenant, t),
  queue: (tenant, t) => piling(tenant, t, BREAKERS_OPEN, heldPay(tenant, t)),
  calls: (dependency, result, t) => {
    if (dependency !== "pay.example" || t < T0) return healthy.calls(dependency, result, t);
    if (result === "healthy") return 0;
    return t < BREAKERS_OPEN ? 3 : 1 / 15; // then only the probes
  },
  breakerState: (dependency, t) => (dependency === "pay.example" && t >= BREAKERS_OPEN ? (probing(t) ? 1 : 2) : 0),
  breakersOpen: (dependency, t) => (dependency === "pay.example" && t >= BREAKERS_OPEN ? (probing(t) ? 1 : 2) : null),
};

// --- S12: every scheduler is down for 10 minutes, then a bounded catch-up drains the backlog at the cap.
const RESTART = T0 + min(10);
/** Per tenant and second from RESTART: the jobs dispatched and left overdue (each scheduler's cap of 10/s shared fairly). */
const catchUp = (() => {
  const backlog = new Map<Tenant, number>(TENANTS.map((x) => [x, ARRIVALS[x] * (RESTART - T0)]));
  const done = new Map<Tenant, number>(TENANTS.map((x) => [x, 0]));
  const rates: Map<Tenant, number>[] = [];
  const left: Map<Tenant, number>[] = [];
  const drained: Map<Tenant, number>[] = [];
  const pairs: Tenant[][] = [
    [TENANT_A, TENANT_B],
    [TENANT_C, "other"],
  ];
  for (let s = 0; s <= min(40); s++) {
    const rate = new Map<Tenant, number>();
    for (const pair of pairs) {
      // A tenant with a backlog takes up to half the cap, or what the other leaves.
      const needs = pair.map((x) => (backlog.get(x)! > 0 ? Infinity : ARRIVALS[x]));
      const half = 10 / 2;
      const first = Math.min(needs[0]!, Math.max(half, 10 - Math.min(needs[1]!, half)));
      rate.set(pair[0]!, first);
      rate.set(pair[1]!, Math.min(needs[1]!, 10 - first));
    }
    rates.push(rate);
    left.push(new Map(backlog));
    drained.push(new Map(done));
    for (const x of TENANTS) {
      const before = backlog.get(x)!;
      backlog.set(x, Math.max(0, before + ARRIVALS[x] - rate.get(x)!));
      done.set(x, done.get(x)! + Math.min(rate.get(x)!, before + ARRIVALS[x]));
    }
  }
  const at = (t: number) => Math.min(Math.max(0, Math.floor(t - RESTART)), rates.length - 1);
  return {
    rate: (x: Tenant, t: number) => rates[at(t)]!.get(x)!,
    overdue: (x: Tenant, t: number) => left[at(t)]!.get(x)!,
    /** How late the jobs started now are: the backlog is released in due order. */
    wait: (x: Tenant, t: number) => (left[at(t)]!.get(x)! > 0 ? t - (T0 + drained[at(t)]!.get(x)! / ARRIVALS[x]) : 0),
  };
})();
const schedulersBack = (t: number) => t < T0 || t >= RESTART;
const catchUpModel = deployment({
  up: (i, t) => !SCHEDULERS.includes(i as never) || schedulersBack(t),
  held: (s, t) => (t < T0 ? healthy.held(s, t) : s === S1 ? { 0: 8, 1: 8 } : { 2: 8, 3: 8 }),
  dispatched: (x, t) => (t >= RESTART ? catchUp.rate(x, t) : ARRIVALS[x]),
  starts: (x, t) => (t >= RESTART ? catchUp.rate(x, t) : t >= T0 + 30 ? 0 : ARRIVALS[x]),
  lag: (x, t) => (t >= RESTART ? Math.max(0.08, catchUp.wait(x, t)) : 0.08),
  throttled: (_s, reason, t) => (reason === "rate" && t >= RESTART && TENANTS.some((x) => catchUp.overdue(x, t) > 0) ? 5 : 0),
  queue: (x, t) => {
    const q = BASE(x, t);
    if (t < RESTART) return q;
    const overdue = catchUp.overdue(x, t);
    return { ...q, overdue: q.overdue + overdue, waiting: q.waiting + overdue, oldestDueAge: overdue > 0 ? catchUp.wait(x, t) : q.oldestDueAge };
  },
});

// --- S16: tenant A makes 30,000 jobs due at T0; fair dispatch gives it what B leaves of scheduler-1's cap.
const BURST = 30_000;
const burst = deployment({
  dispatched: (x, t) => (x === TENANT_A && t >= T0 ? 8 : ARRIVALS[x]),
  lag: (x, t) => (x === TENANT_A && t >= T0 ? Math.max(0.08, t - T0) : 0.08),
  throttled: (s, reason, t) => (s === S1 && reason === "rate" && t >= T0 ? 5 : 0),
  queue: (x, t) => {
    const q = BASE(x, t);
    if (x !== TENANT_A || t < T0) return q;
    const left = BURST - 4 * (t - T0);
    return { ...q, waiting: q.waiting + left, overdue: q.overdue + left, inFlight: 40, oldestDueAge: t - T0 };
  },
});

// --- S17: tenant B replays 2,000 dead jobs to pay.example at 5/s; 40% fail again (the breaker stays closed).
const replayDone = (t: number) => Math.min(2000, 5 * Math.max(0, t - T0));
const replay = deployment({
  dispatched: (x, t) => ARRIVALS[x] + (x === TENANT_B && t >= T0 && replayDone(t) < 2000 ? 5 : 0),
  queue: (x, t) => (x === TENANT_B ? { ...BASE(x, t), dead: 2000 - 0.6 * replayDone(t) } : BASE(x, t)),
  replay: (x, t) =>
    x === TENANT_B && t >= T0
      ? { status: "running", pending: 2000 - replayDone(t), inFlight: 10, succeeded: 0.6 * replayDone(t), failed: 0.4 * replayDone(t), failureRatio: 0.4 }
      : null,
  calls: (dependency, result, t) => {
    const replaying = dependency === "pay.example" && t >= T0 && replayDone(t) < 2000;
    if (result === "healthy") return (dependency === "pay.example" ? 3 : dependency === "mail.example" ? 3 : 3) + (replaying ? 3 : 0);
    return (dependency === "pay.example" ? 1 / 60 : 0) + (replaying ? 2 : 0);
  },
});

export const INCIDENTS: Incident[] = [
  { name: "healthy: nothing fires", model: healthy, fires: [] },
  {
    name: "busy but healthy: dispatch near its cap, small backlogs, a second of lag",
    model: deployment({
      dispatched: (x) => 2 * ARRIVALS[x],
      lag: () => 1.5,
      throttled: (_s, reason) => (reason === "rate" ? 0.5 : 0),
      queue: (x, t) => ({ ...BASE(x, t), overdue: 60, oldestDueAge: 4 }),
      outbox: () => ({ backlog: 40, lag: 2 }),
    }),
    fires: [],
  },
  {
    name: "S11 a downstream dependency is down: pay.example fails, the breakers of its two tenants open and hold its jobs",
    model: deployment(dependencyOutage),
    fires: [
      {
        alert: "TickDependencyDown",
        at: T0 + min(10),
        labels: { dependency: "pay.example" },
        summary: "Dependency pay.example is down: calls to it fail and its jobs are held by circuit breakers (the scheduler is fine)", description: "2 tenant breaker(s) on pay.example are open; of its calls in the last 5 minutes 100% failed (5xx, 408, 425, 429, timeouts, network errors). Its jobs wait, without burning attempts, until a probe succeeds; other dependencies' jobs are dispatched as usual.",
      },
    ],
  },
  {
    name: "S11 a dependency is down while its jobs are the only work due (at night): nothing at all is dispatched",
    model: deployment({
      ...dependencyOutage,
      dispatched: (tenant, t) => (t >= BREAKERS_OPEN ? 0 : t >= T0 ? (CALLS[tenant]["pay.example"] ?? 0) : ARRIVALS[tenant]),
    }),
    fires: [{ alert: "TickDependencyDown", at: T0 + min(10), labels: { dependency: "pay.example" }, summary: "Dependency pay.example is down: calls to it fail and its jobs are held by circuit breakers (the scheduler is fine)", description: "2 tenant breaker(s) on pay.example are open; of its calls in the last 5 minutes 100% failed (5xx, 408, 425, 429, timeouts, network errors). Its jobs wait, without burning attempts, until a probe succeeds; other dependencies' jobs are dispatched as usual." }],
  },
  {
    name: "S2 the scheduler is down: every scheduler process stops",
    model: deployment({
      up: (i, t) => !SCHEDULERS.includes(i as never) || t < T0,
      starts: (x, t) => (t >= T0 + 30 ? 0 : ARRIVALS[x]),
    }),
    fires: [{ alert: "TickSchedulerDown", at: T0 + min(5), labels: { app: "scheduler" }, summary: "The scheduler is down: no scheduler process is reporting, so no due job is dispatched", description: "No scheduler has exported metrics for a minute (every scheduler process is down, or Prometheus cannot scrape them). Due jobs stay durable in Postgres but nothing dispatches them; 2 worker process(es) are still reporting." }],
  },
  {
    name: "S2 one scheduler dies, the other takes its shards over within the lease TTL: nothing to do",
    model: deployment({
      up: (i, t) => i !== S1 || t < T0,
      held: (s, t) => (s === S2 && t >= T0 + 20 ? { 0: 8, 1: 8, 2: 7, 3: 7 } : healthy.held(s, t)),
    }),
    fires: [],
  },
  {
    name: "S2 shards nobody holds: one scheduler dies and a stuck transaction locks its lease rows, so the other cannot take them",
    model: deployment({
      up: (i, t) => i !== S1 || t < T0,
      starts: (x, t) => ((x === TENANT_A || x === TENANT_B) && t >= T0 + 30 ? 0 : ARRIVALS[x]),
    }),
    fires: [{ alert: "TickShardsUnheld", at: T0 + min(10), labels: {}, summary: "The scheduler is broken: 2 shard(s) have no scheduler holding them, their due jobs are not dispatched", description: "2 of 4 shards have had no holder for 2 minutes, longer than a takeover takes (SCHEDULER_LEASE_TTL plus a renewal). The running schedulers hold 2 between them and are not taking the rest." }],
  },
  {
    name: "S2 a scheduler's dispatch loop hangs while its lease loop keeps its shards",
    model: deployment({
      loopRuns: (s, loop, outcome, t) => (s === S1 && loop === "dispatch" && t >= T0 ? 0 : healthy.loopRuns(s, loop, outcome, t)),
      dispatched: (x, t) => ((x === TENANT_A || x === TENANT_B) && t >= T0 ? 0 : ARRIVALS[x]),
      queue: (x, t) => piling(x, t, T0, x === TENANT_A || x === TENANT_B ? ARRIVALS[x] : 0),
    }),
    fires: [{ alert: "TickSchedulerLoopStalled", at: T0 + min(10), labels: { instance: S1, loop: "dispatch" }, summary: "The scheduler is broken: the dispatch loop of scheduler-1:9464 has finished no step for 5 minutes", description: "Scheduler scheduler-1:9464 is running and reaches its stores, but its dispatch loop has finished no step successfully for 5 minutes (stuck or failing every step). It holds 2 shard(s)." }],
  },
  {
    name: "S2 the schedulers run but claim nothing: due jobs wait, every breaker closed",
    model: deployment({
      dispatched: (x, t) => (t >= T0 ? 0 : ARRIVALS[x]),
      queue: (x, t) => piling(x, t, T0, ARRIVALS[x]),
    }),
    fires: [{ alert: "TickDispatchStalled", at: T0 + min(10), labels: {}, summary: "The scheduler is broken: due jobs wait and nothing is dispatched, with every circuit breaker closed", description: "The oldest overdue job has waited 10m 0s and no job has been dispatched for 5 minutes (5407 jobs overdue), while no breaker is open, the workers take work and the stores answer: the schedulers hold their shards and their loops run, but claim nothing." }],
  },
  {
    name: "S8 a stale leader: scheduler-1 freezes 45 s, scheduler-2 takes its shards, scheduler-1 resumes and writes",
    model: deployment({
      frozen: (i, t) => i === S1 && t >= T0 && t < T0 + 45,
      held: (s, t): Record<number, number> => {
        if (s === S1) return t < T0 + 60 ? { 0: 7, 1: 7 } : t < T0 + 120 ? {} : { 0: 9, 1: 9 };
        return t >= T0 + 30 && t < T0 + 120 ? { 0: 8, 1: 8, 2: 7, 3: 7 } : { 2: 7, 3: 7 };
      },
      staleWrites: (s, shard, t) => (s === S1 && shard < 2 && t === T0 + 45 ? 1 / 15 : 0),
    }),
    fires: [
      { alert: "TickStaleLeaderWriting", at: T0 + min(3), labels: { instance: S1, shard: "0" }, summary: "A stale leader is writing: scheduler-1:9464 wrote to shard 0 after losing its lease (refused)", description: "1 write(s) by scheduler-1:9464 to shard 0 were refused by the epoch fence in the last 10 minutes: it paused past its lease (GC, CPU starvation, SIGSTOP, a partition) and resumed as if still leader. The shard is now at epoch 9. Nothing was double-dispatched; find out why it paused." },
      { alert: "TickStaleLeaderWriting", at: T0 + min(3), labels: { instance: S1, shard: "1" }, summary: "A stale leader is writing: scheduler-1:9464 wrote to shard 1 after losing its lease (refused)", description: "1 write(s) by scheduler-1:9464 to shard 1 were refused by the epoch fence in the last 10 minutes: it paused past its lease (GC, CPU starvation, SIGSTOP, a partition) and resumed as if still leader. The shard is now at epoch 9. Nothing was double-dispatched; find out why it paused." },
    ],
  },
  {
    name: "S16 one tenant bursts: A makes 30,000 jobs due at once; the others keep their lag",
    model: burst,
    fires: [{ alert: "TickTenantBurst", at: T0 + min(10), labels: { tenant: TENANT_A }, summary: "Tenant 11111111-1111-4111-8111-111111111111 is bursting: it holds most of the overdue backlog, other tenants are unaffected", description: "Tenant 11111111-1111-4111-8111-111111111111 has 27603 overdue jobs (99.99% of all), half its jobs start more than 5 minutes (the top bucket) late and it is dispatched at 8.0/s, while the other tenants' 90th percentile lag is 90ms: fair dispatch is containing the burst to the tenant." }],
  },
  {
    name: "S12 a catch-up: the schedulers come back after 10 minutes down and release the backlog at the dispatch cap",
    model: catchUpModel,
    fires: [
      { alert: "TickSchedulerDown", at: T0 + min(5), labels: { app: "scheduler" }, summary: "The scheduler is down: no scheduler process is reporting, so no due job is dispatched", description: "No scheduler has exported metrics for a minute (every scheduler process is down, or Prometheus cannot scrape them). Due jobs stay durable in Postgres but nothing dispatches them; 2 worker process(es) are still reporting." },
      { alert: "TickCatchUpInProgress", at: RESTART + min(5), labels: {}, summary: "A catch-up is proceeding: 2407 overdue jobs of many tenants are being released at the dispatch rate", description: "2407 jobs are overdue across 2 tenants and the backlog is falling by 10.5/s; jobs are dispatched at 19.2/s against a cap of 20/s. No action unless it stops falling." },
    ],
  },
  {
    name: "S4 the outbox is not draining: Redis answers PING but refuses writes (a read-only replica after a failover)",
    model: deployment({
      ...nothingStarts(T0 + 15),
      publishFailures: (_s, t) => (t >= T0 ? 0.1 : 0),
      outbox: (t) => (t >= T0 ? { backlog: 4 + Math.min(2000, 9 * (t - T0)), lag: t - T0 } : { backlog: 4, lag: 0.3 }),
    }),
    fires: [{ alert: "TickOutboxNotDraining", at: T0 + min(10), labels: {}, summary: "The outbox is not draining: messages committed to Postgres are not reaching the broker", description: "The oldest unpublished outbox row is 10m 0s old and 2004 rows wait; 12.0 publish batches fail per minute, though Redis and Postgres are up. Nothing is lost (the rows are durable); webhooks and re-published attempts are late." }],
  },
  {
    name: "S10 Redis is down: no PONG for anyone, the outbox grows, dispatch polls Postgres",
    model: deployment({
      ...nothingStarts(T0 + 15),
      storeUp: (_i, store, t) => store !== "redis" || t < T0,
      publishFailures: (_s, t) => (t >= T0 ? 0.1 : 0),
      outbox: (t) => (t >= T0 ? { backlog: 4 + Math.min(2000, 9 * (t - T0)), lag: t - T0 } : { backlog: 4, lag: 0.3 }),
      dueIndex: (shard, t) => (t >= T0 ? { mode: 0, dueTenants: 1, indexTenants: 1, polling: 10, rebuilds: 0 } : healthy.dueIndex(shard, t)),
    }),
    fires: [{ alert: "TickRedisDown", at: T0 + min(5), labels: {}, summary: "Redis is down: the broker and the due index are unreachable, no message reaches the workers", description: "None of the 5 Tick processes (console, schedulers, workers) has had a PONG from Redis for a minute. Dispatch records wait in the outbox (2004 rows) and the schedulers poll Postgres for due work; nothing is lost, and both drain when Redis is back." }],
  },
  {
    name: "S3 the database is down: no process reaches Postgres, every loop fails, running attempts lose their leases",
    model: deployment({
      storeUp: (_i, store, t) => store !== "database" || t < T0,
      loopRuns: (s, loop, outcome, t) => (t < T0 ? healthy.loopRuns(s, loop, outcome, t) : outcome === "error" ? 0.2 : 0),
      dispatched: (x, t) => (t >= T0 ? 0 : ARRIVALS[x]),
      leaseTrouble: (_w, kind, t) => (kind === "lost" && t === T0 + 15 ? 10 / 15 : 0),
    }),
    fires: [{ alert: "TickDatabaseDown", at: T0 + min(5), labels: {}, summary: "The database is down: no Tick process reaches Postgres; job creation answers 503 and nothing is dispatched", description: "None of the 5 Tick processes (console, schedulers, workers) has had an answer from Postgres for a minute. Creates fail with 503 (clients retry with their Idempotency-Key), dispatch and completions stop; running attempts finish but cannot record their outcome until it is back." }],
  },
  {
    name: "S3 one scheduler is cut off from the database; the other takes its shards over",
    model: deployment({
      storeUp: (i, store, t) => !(i === S1 && store === "database" && t >= T0),
      loopRuns: (s, loop, outcome, t) => (s === S1 && t >= T0 ? (outcome === "error" ? 0.2 : 0) : healthy.loopRuns(s, loop, outcome, t)),
      held: (s, t) => (s === S2 && t >= T0 + 30 ? { 0: 8, 1: 8, 2: 7, 3: 7 } : healthy.held(s, t)),
    }),
    fires: [
      {
        alert: "TickStoreUnreachableFromProcess",
        at: T0 + min(5),
        labels: { app: "scheduler", instance: S1, job: "tick-scheduler", store: "database" },
        summary: "scheduler-1:9464 cannot reach database, though other processes can", description: "scheduler scheduler-1:9464 has had no answer from database for 2 minutes while the other processes reach it: a network partition, a firewall or DNS change, or a broken connection pool on that host. A scheduler's shards and a worker's attempts pass to the others once their leases lapse; a console answers 503 to requests that need the store.",
      },
    ],
  },
  {
    name: "S7 attempt leases expire while work goes on: worker-1 stalls in GC pauses, its late completions are refused",
    model: deployment({
      leaseTrouble: (w, kind, t) => (w !== W1 ? 0 : kind === "late" ? every(60, T0)(t) : kind === "lost" ? every(120, T0 + 30)(t) : 0),
      reaped: (s, decision, t) => (s === S1 && decision === "retry" ? every(45, T0 + 15)(t) : 0),
    }),
    fires: [{ alert: "TickAttemptLeasesExpiring", at: T0 + min(12), labels: {}, summary: "Attempt leases are expiring while workers are still working: attempts may run twice", description: "In 10 minutes the reaper took over 13 expired attempt leases while live workers saw 15 of their leases lost (late completions refused by the fencing token, renewals refused, sends withheld): workers are pausing or starved longer than WORKER_LEASE_TTL, not dying. Fencing keeps the bookkeeping right; the tenants' endpoints see duplicates (same Idempotency-Key)." }],
  },
  {
    name: "S1 a worker dies holding leases: the reaper retries its attempts, the other worker carries on: nothing to do",
    model: deployment({
      up: (i, t) => i !== W2 || t < T0,
      reaped: (s, decision, t) => (s === S1 && decision === "retry" && t === T0 + 30 ? 12 / 15 : 0),
    }),
    fires: [],
  },
  {
    name: "S1 every worker is down: attempts queue up to the per-shard limit, then dispatch holds",
    model: deployment({ ...nothingStarts(T0), up: (i, t) => !WORKERS.includes(i as never) || t < T0 }),
    fires: [{ alert: "TickWorkersDown", at: T0 + min(5), labels: { app: "worker" }, summary: "The workers are down: no worker process is reporting, so no attempt starts", description: "No worker has exported metrics for a minute (every worker is down, or Prometheus cannot scrape them). The schedulers go on claiming until SCHEDULER_MAX_QUEUED_PER_SHARD attempts wait per shard, then hold; 682 jobs are overdue." }],
  },
  {
    name: "S13 clocks drift: worker-1's clock runs 3.2 s ahead of the database's",
    model: deployment({ clockOffset: (i, t) => (i === W1 && t >= T0 ? 3.2 : healthy.clockOffset(i, t)) }),
    fires: [{ alert: "TickClockDrift", at: T0 + min(10), labels: { app: "worker", instance: W1, job: "tick-worker" }, summary: "The clock of worker-1:9465 has drifted 3.2 s from the database's", description: "worker worker-1:9465's wall clock differs from the database clock by +3.20 s (positive: ahead). Tick decides by the database clock, so nothing is wrong yet, but timestamps this host writes (logs, its own timers) are off, and NTP on it is not working." }],
  },
  {
    name: "S17 a DLQ replay hurts its target: 40% of tenant B's replayed jobs fail again at pay.example",
    model: replay,
    fires: [{ alert: "TickReplayHurtingTarget", at: T0 + min(5), labels: { tenant: TENANT_B }, summary: "A DLQ replay of tenant 22222222-2222-4222-8222-222222222222 is hurting its target: 40% of replayed jobs fail again", description: "Tenant 22222222-2222-4222-8222-222222222222's replay: 40% of its latest judged first attempts failed; 500 jobs are still to be released, 600 failed again. The replay pauses itself at its failure threshold (0.5 by default); its target is being pushed back into an outage." }],
  },
  {
    name: "the DLQ grows: tenant C's endpoint answers 422 to one job in four, which die without retries",
    model: deployment({ queue: (x, t) => (x === TENANT_C && t >= T0 ? { ...BASE(x, t), dead: 5 + 0.5 * (t - T0) } : BASE(x, t)) }),
    fires: [{ alert: "TickDLQGrowing", at: T0 + min(20), labels: { tenant: TENANT_C }, summary: "Tenant 33333333-3333-4333-8333-333333333333's dead-letter queue is growing: about 600 more dead jobs in 30 minutes", description: "Tenant 33333333-3333-4333-8333-333333333333 now has 605 dead jobs, about 600 more than half an hour ago: its jobs use up their attempts (their endpoint answers errors a breaker does not count, such as 4xx, or fails slower than the breaker opens). Nothing is lost; they can be replayed once the cause is fixed." }],
  },
  {
    name: "webhook deliveries fail: tenant C's callback URL answers 503",
    model: deployment({
      webhooks: (x, outcome, t) => {
        if (x !== TENANT_C || t < T0) return outcome === "delivered" ? ARRIVALS[x] : 0;
        return outcome === "retrying" ? 3 : 0;
      },
    }),
    fires: [{ alert: "TickWebhookDeliveriesFailing", at: T0 + min(20), labels: { tenant: TENANT_C }, summary: "Webhook deliveries to tenant 33333333-3333-4333-8333-333333333333 are failing: 100% of tries fail", description: "100% of completion webhook tries to tenant 33333333-3333-4333-8333-333333333333's callback URL failed over 10 minutes (3.00 tries/s). Deliveries are retried with backoff and kept; the tenant's endpoint is the problem, not Tick." }],
  },
  {
    name: "S9 the due index is lost and rebuilt within 30 s (Redis restarted empty): nothing to do",
    model: deployment({
      dueIndex: (shard, t) =>
        t >= T0 && t < T0 + 30
          ? { mode: 0, dueTenants: 1, indexTenants: 0, polling: 10, rebuilds: 0 }
          : { ...healthy.dueIndex(shard, t), rebuilds: t === T0 + 30 ? 1 / 15 : 0 },
    }),
    fires: [],
  },
  {
    name: "S9 the due index stays missing: Redis evicts shard 2's index keys (maxmemory-policy allkeys-lru), dispatch keeps polling",
    model: deployment({
      dueIndex: (shard, t) => (shard === 2 && t >= T0 ? { mode: 0, dueTenants: 1, indexTenants: 0, polling: 10, rebuilds: 0 } : healthy.dueIndex(shard, t)),
    }),
    fires: [{ alert: "TickDueIndexMissing", at: T0 + min(10), labels: { instance: S2, shard: "2" }, summary: "The due index of shard 2 is empty or missing: dispatch is polling Postgres", description: "For 5 minutes scheduler-2:9464 has found shard 2's due work by polling Postgres or the Redis index has listed fewer due tenants than Postgres (0 against 1), though Redis answers: the rebuild is not completing. Jobs are not lost; dispatch is slower." }],
  },
];

export interface AlertRule {
  alert: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const duration = (s: number) => (s % 60 === 0 ? `${s / 60}m` : `${Math.floor(s / 60)}m${s % 60}s`);

/** promtool's unit tests of the rules: per incident, its alerts firing (labels and annotations) and every other alert silent. */
export function alertTests(rules: AlertRule[], ruleFiles: string[]): string {
  const tests = INCIDENTS.map((incident) => {
    const firing = new Set(incident.fires.map((f) => f.alert));
    const checks: { eval_time: string; alertname: string; exp_alerts: unknown[] }[] = [];
    const byCheck = new Map<string, Firing[]>();
    for (const f of incident.fires) {
      const key = `${f.at} ${f.alert}`;
      byCheck.set(key, [...(byCheck.get(key) ?? []), f]);
    }
    for (const fires of byCheck.values()) {
      const rule = rules.find((r) => r.alert === fires[0]!.alert);
      if (!rule) throw new Error(`${incident.name}: no rule ${fires[0]!.alert}`);
      checks.push({
        eval_time: duration(fires[0]!.at),
        alertname: rule.alert,
        exp_alerts: fires.map((f) => ({
          exp_labels: { ...rule.labels, ...f.labels },
          exp_annotations: { summary: f.summary, description: f.description, runbook_url: rule.annotations.runbook_url },
        })),
      });
    }
    for (const at of QUIET_CHECKS) {
      for (const rule of rules) if (!firing.has(rule.alert)) checks.push({ eval_time: duration(at), alertname: rule.alert, exp_alerts: [] });
    }
    return { name: incident.name, interval: "15s", input_series: seriesOf(incident.model), alert_rule_test: checks };
  });
  const header = [
    "# Written by tooling/deploy/src/prometheus.test.ts from alert-matrix.ts (the incidents) and alert-series.ts",
    "# (their series). Run: promtool test rules <this file>",
    "#",
    "# Per incident, the series a small deployment (2 schedulers, 4 shards, 2 workers, tenants A, B, C and",
    "# other) would export during it, the alerts it must fire, and every other alert silent from a minute before",
    "# the incident (at 15m) to its end.",
    "",
  ].join("\n");
  return header + stringify({ rule_files: ruleFiles, evaluation_interval: "30s", tests }, { lineWidth: 0 });
}
