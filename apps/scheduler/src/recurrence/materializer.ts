import { randomUUID } from "node:crypto";
import type pg from "pg";
import { sql } from "@tick/db";
import { occurrenceKey, planOccurrences } from "@tick/recurrence";
import type { Logger } from "@tick/runtime";
import { withShardFence } from "../leases/shard-fence.js";
import type { HeldLease } from "../leases/shard-lease-manager.js";
import type { SchedulerMetrics } from "../metrics.js";

export interface MaterializerConfig {
  holder: string;
  lookaheadMs: number;
  idempotencyTtlMs: number;
  batch: number;
}

/**
 * Turns due schedule occurrences into jobs (S14), applying each schedule's misfire policy after
 * downtime (S2, S12), inside the shard-fenced transaction. Occurrence jobs carry an idempotency key
 * derived from the schedule and the nominal local time, backed by unique constraints, so a second
 * scheduler (or a stale one) can never create an occurrence twice.
 */
export class Materializer {
  constructor(
    private readonly pool: pg.Pool,
    private readonly config: MaterializerConfig,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
    private readonly noteDue: (shard: number, tenantId: string, dueAtMs: number) => Promise<void>,
  ) {}

  /** `more`: the round took a whole batch of schedules, so more may be due now (run again without waiting). */
  async runShard(lease: HeldLease): Promise<{ leaseHeld: boolean; created: number; more: boolean }> {
    const due = new Map<string, number>(); // tenant -> earliest occurrence planned
    const result = await withShardFence(
      this.pool,
      this.config.holder,
      lease,
      async (client) => {
        // Decide in code, write once: every locked schedule is planned, then one statement creates all
        // their occurrence jobs and one moves them all on (a statement per schedule capped a shard at a
        // few hundred schedules a second). The occurrence uniqueness still decides each row.
        const jobs: sql.OccurrenceJob[] = [];
        const advances: sql.ScheduleAdvance[] = [];
        // planOccurrences is pure, and schedules that share a rule and fired together ask it the same
        // question (every "0 * * * *" in one zone, on time, in this statement's snapshot): asked once per
        // distinct input per round (otherwise the cron walk's date arithmetic is most of the scheduler's CPU).
        const plans = new Map<string, ReturnType<typeof planOccurrences>>();
        const locked = await sql.lockDueSchedules(client, lease.shard, this.config.lookaheadMs, this.config.batch);
        for (const s of locked) {
          const input = {
            rule: { cron: s.cron, timezone: s.timezone, dstGap: s.dst_gap_policy, dstOverlap: s.dst_overlap_policy },
            misfire: s.misfire_policy,
            maxCatchUp: s.max_catch_up,
            misfireThresholdMs: s.misfire_threshold_ms,
            since: s.materialized_through ?? new Date(s.created_at.getTime() - 1),
            now: s.db_now,
            lookaheadMs: this.config.lookaheadMs,
          };
          const key = [
            input.rule.cron, input.rule.timezone, input.rule.dstGap, input.rule.dstOverlap, input.misfire, input.maxCatchUp,
            input.misfireThresholdMs, input.since.getTime(), input.now.getTime(),
          ].join("\u0000");
          let plan = plans.get(key);
          if (!plan) plans.set(key, (plan = planOccurrences(input)));
          for (const r of plan.runs) {
            jobs.push({
              scheduleId: s.id,
              template: s.job_template,
              id: randomUUID(),
              dueAt: r.occurrence.at,
              occurrenceAt: r.occurrence.at,
              idempotencyKey: occurrenceKey(s.id, r.occurrence),
              occurrence: {
                nominal: r.occurrence.nominal,
                offsetMinutes: r.occurrence.offsetMinutes,
                ...(r.occurrence.dst ? { dst: r.occurrence.dst } : {}),
                ...(r.coalesced ? { coalesced: r.coalesced } : {}),
              },
            });
            const first = due.get(s.tenant_id);
            if (first === undefined || r.occurrence.at.getTime() < first) due.set(s.tenant_id, r.occurrence.at.getTime());
          }
          const lastOccurrenceAt = plan.runs.reduce<Date | null>((latest, r) => (latest && latest >= r.occurrence.at ? latest : r.occurrence.at), null);
          advances.push({ id: s.id, version: s.version, nextFireAt: plan.nextFireAt, materializedThrough: plan.through, lastOccurrenceAt });
          if (plan.missed) {
            this.metrics.misfires.inc({ policy: s.misfire_policy }, plan.missed);
            this.logger.warn({ scheduleId: s.id, tenantId: s.tenant_id, missed: plan.missed, dropped: plan.dropped, policy: s.misfire_policy }, "schedule missed occurrences (downtime); misfire policy applied");
          }
        }
        const created = await sql.insertOccurrenceJobs(client, jobs, this.config.idempotencyTtlMs);
        await sql.advanceSchedules(client, advances);
        return { created, more: locked.length >= this.config.batch };
      },
      (stale) => this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "recurrence" }),
    );
    if (!result.ok) return { leaseHeld: false, created: 0, more: false };
    for (const [tenantId, dueAtMs] of due) await this.noteDue(lease.shard, tenantId, dueAtMs).catch(() => {});
    this.metrics.occurrences.inc(result.value.created);
    return { leaseHeld: true, ...result.value };
  }
}
