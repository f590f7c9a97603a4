import { Counter, Gauge, type Registry } from "prom-client";

export function createSchedulerMetrics(registry: Registry) {
  return {
    dispatched: new Counter({ name: "tick_dispatched_total", help: "Jobs claimed into dispatched attempts", labelNames: ["shard"], registers: [registry] }),
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
  };
}

export type SchedulerMetrics = ReturnType<typeof createSchedulerMetrics>;
