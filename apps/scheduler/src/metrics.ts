import { Counter, Gauge, type Registry } from "prom-client";
import { MetricLabels } from "@tick/runtime";

/**
 * The scheduler's metrics (docs/observability.md lists every one). Tenant and queue labels go through the
 * process's MetricLabels, so their values are bounded whatever the number of tenants.
 */
export function createSchedulerMetrics(registry: Registry, labels: MetricLabels = new MetricLabels()) {
  return {
    labels,
    dispatched: labels.track(
      new Counter({ name: "tick_dispatched_total", help: "Jobs claimed into dispatched attempts, by shard and tenant", labelNames: ["shard", "tenant"], registers: [registry] }),
      "tenant",
    ),
    dispatchThrottled: new Counter({
      name: "tick_dispatch_throttled_rounds_total",
      help: "Dispatch rounds of a shard with due work that claimed nothing or less than was due, by what held them (rate: the dispatch rate limit; queue_full: the shard's unstarted attempts at SCHEDULER_MAX_QUEUED_PER_SHARD)",
      labelNames: ["reason"],
      registers: [registry],
    }),
    dispatchRateLimit: new Gauge({
      name: "tick_dispatch_rate_limit_per_second",
      help: "This scheduler's share of SCHEDULER_DISPATCH_RATE (jobs/s), following the share of shards it holds: the cap a catch-up drains at",
      registers: [registry],
    }),
    staleWrites: new Counter({
      name: "tick_stale_writes_rejected_total",
      help: "Scheduler writes refused because the shard lease was no longer held at that epoch",
      labelNames: ["shard", "component"],
      registers: [registry],
    }),
    published: new Counter({ name: "tick_outbox_published_total", help: "Outbox rows published to the broker", labelNames: ["kind"], registers: [registry] }),
    publishFailures: new Counter({ name: "tick_outbox_publish_failures_total", help: "Failed outbox publish batches", registers: [registry] }),
    outboxBacklog: new Gauge({ name: "tick_outbox_backlog", help: "Unpublished outbox rows", registers: [registry] }),
    outboxLagSeconds: new Gauge({ name: "tick_outbox_lag_seconds", help: "Age of the oldest unpublished outbox row (publication lag)", registers: [registry] }),
    leasesReaped: new Counter({ name: "tick_leases_reaped_total", help: "Running attempts whose lease expired", labelNames: ["decision"], registers: [registry] }),
    flowKeyLeaseExpiries: new Counter({
      name: "tick_flow_key_lease_expiries_total",
      help: "Attempts of keyed jobs whose lease expired, settled by the reaper: each frees its key's slot while the lost worker may still send its request, the one case where a key's concurrency can be exceeded",
      registers: [registry],
    }),
    flowKeyDropped: new Counter({
      name: "tick_flow_key_dropped_total",
      help: "Due jobs ended rate_limited because their flow key was over its rate in a queue that drops (perKeyRateMode drop)",
      registers: [registry],
    }),
    flowKeyHeldJobs: new Gauge({
      name: "tick_flow_key_held_jobs",
      help: "Due jobs held by their flow key's limits across the deployment, by reason (key_paused, key_at_cap, key_over_rate)",
      labelNames: ["reason"],
      registers: [registry],
    }),
    flowKeysHolding: new Gauge({
      name: "tick_flow_keys_holding",
      help: "Flow keys holding due jobs by their limits across the deployment, by reason (key_paused, key_at_cap, key_over_rate)",
      labelNames: ["reason"],
      registers: [registry],
    }),
    republished: new Counter({ name: "tick_attempts_republished_total", help: "Dispatched attempts re-published because no worker started them", registers: [registry] }),
    expired: new Counter({ name: "tick_jobs_expired_total", help: "Jobs that passed their expiry deadline before starting", registers: [registry] }),
    dueIndexMode: new Gauge({ name: "tick_due_index_mode", help: "1 when a shard finds due work through the Redis index, 0 when polling Postgres", labelNames: ["shard"], registers: [registry] }),
    pollingRounds: new Counter({ name: "tick_due_polling_rounds_total", help: "Dispatch rounds that polled Postgres because the due index was unavailable", labelNames: ["shard"], registers: [registry] }),
    dueIndexRebuilds: new Counter({ name: "tick_due_index_rebuilds_total", help: "Completed rebuilds of a shard's due index from Postgres", labelNames: ["shard"], registers: [registry] }),
    dueIndexRepairs: new Counter({ name: "tick_due_index_repairs_total", help: "Due tenants missing from the index found by reconciliation", labelNames: ["shard"], registers: [registry] }),
    occurrences: new Counter({ name: "tick_schedule_occurrences_total", help: "Jobs created from schedule occurrences", registers: [registry] }),
    misfires: new Counter({ name: "tick_schedule_misfires_total", help: "Schedule occurrences missed during downtime (then handled by the misfire policy)", labelNames: ["policy"], registers: [registry] }),
    replayReleased: new Counter({ name: "tick_replay_released_total", help: "Dead jobs released by DLQ replays", registers: [registry] }),
    replayAutoPauses: new Counter({ name: "tick_replay_auto_pauses_total", help: "DLQ replays paused automatically because replayed jobs kept failing", registers: [registry] }),
    maintenanceRows: new Counter({
      name: "tick_maintenance_rows_total",
      help:
        "Rows the maintenance loop counted, wrote, moved or deleted (jobs_rolled_up, rollup_rows_written, gauge_rows_sampled, rollup_rows_deleted, jobs_archived, history_jobs_deleted, outbox_deleted, ...) and partitions created or dropped",
      labelNames: ["task"],
      registers: [registry],
    }),
    maintenanceBacklog: new Gauge({
      name: "tick_maintenance_backlog",
      help: "Rows waiting for the maintenance loop (finished jobs past the archive delay, published outbox rows past their keep time), counted up to 100000",
      labelNames: ["kind"],
      registers: [registry],
    }),
    maintenanceLastRound: new Gauge({ name: "tick_maintenance_last_round_timestamp_seconds", help: "When the maintenance loop last finished a round", registers: [registry] }),
    shardsHeld: new Gauge({ name: "tick_shards_held", help: "Shard leases this scheduler holds", registers: [registry] }),
    shardCount: new Gauge({ name: "tick_shard_count", help: "Shards tenants are spread over (TICK_SHARDS); sum(tick_shards_held) below it means shards nobody holds", registers: [registry] }),
    shardEpoch: new Gauge({ name: "tick_shard_epoch", help: "The epoch of each shard lease this scheduler holds (raised by every acquisition; a takeover raises it)", labelNames: ["shard"], registers: [registry] }),
    shardRenewals: new Counter({ name: "tick_shard_lease_renewals_total", help: "Shard lease renewals that succeeded (one per shard renewed)", registers: [registry] }),
    shardLeasesLost: new Counter({
      name: "tick_shard_leases_lost_total",
      help: "Shard leases this scheduler lost: a renewal refused because the lease had expired or another scheduler had taken it",
      registers: [registry],
    }),
    shardAcquisitions: new Counter({
      name: "tick_shard_lease_acquisitions_total",
      help: "Shard leases acquired, by kind (takeover: the previous holder's lease had expired; free: released or never held)",
      labelNames: ["kind"],
      registers: [registry],
    }),
    dueTenants: new Gauge({ name: "tick_due_tenants", help: "Tenants with due jobs in a held shard, as Postgres says (at reconciliation, and every polling round)", labelNames: ["shard"], registers: [registry] }),
    dueIndexTenants: new Gauge({
      name: "tick_due_index_tenants",
      help: "Tenants with due jobs in a held shard, as the Redis due index lists them (at reconciliation; 0 while the index is not built)",
      labelNames: ["shard"],
      registers: [registry],
    }),
    loopRuns: new Counter({ name: "tick_scheduler_loop_runs_total", help: "Steps each scheduler loop finished, by loop and outcome (ok, error)", labelNames: ["loop", "outcome"], registers: [registry] }),
    queueJobs: labels.track(
      new Gauge({
        name: "tick_queue_jobs",
        help: "Jobs per tenant and queue from the latest per-minute sample, by state (waiting: scheduled, due or not; overdue: scheduled and past their due time; in_flight: dispatched or running)",
        labelNames: ["tenant", "queue", "state"],
        registers: [registry],
      }),
      "queue",
    ),
    queueOldestDueAge: labels.track(
      new Gauge({
        name: "tick_queue_oldest_due_age_seconds",
        help: "How long the oldest overdue job of a tenant's queue has waited past its due time, from the latest per-minute sample (0 when none is overdue)",
        labelNames: ["tenant", "queue"],
        registers: [registry],
      }),
      "queue",
    ),
    dlqJobs: labels.track(
      new Gauge({ name: "tick_dlq_jobs", help: "Dead jobs (the DLQ) per tenant and queue, from the latest per-minute sample", labelNames: ["tenant", "queue"], registers: [registry] }),
      "queue",
    ),
    replaysOpen: labels.track(
      new Gauge({ name: "tick_replays_open", help: "DLQ replays not finished, per tenant and status (running, paused, auto_paused, cancelled: still settling)", labelNames: ["tenant", "status"], registers: [registry] }),
      "tenant",
    ),
    replayJobs: labels.track(
      new Gauge({
        name: "tick_replay_jobs",
        help: "Jobs of the open DLQ replays per tenant, by state (pending: not released; in_flight: released, not finished; succeeded, failed, skipped: settled)",
        labelNames: ["tenant", "state"],
        registers: [registry],
      }),
      "tenant",
    ),
    replayFailureRatio: labels.track(
      new Gauge({
        name: "tick_replay_failure_ratio",
        help: "Share of failed first attempts among the latest judged jobs of a running DLQ replay (its target's error rate; the highest over the tenant's replays)",
        labelNames: ["tenant"],
        registers: [registry],
      }),
      "tenant",
    ),
    replayOutcomes: labels.track(
      new Counter({ name: "tick_replay_outcomes_total", help: "Replayed jobs settled, per tenant and outcome (succeeded; failed: dead or expired again; skipped)", labelNames: ["tenant", "outcome"], registers: [registry] }),
      "tenant",
    ),
  };
}

export type SchedulerMetrics = ReturnType<typeof createSchedulerMetrics>;
