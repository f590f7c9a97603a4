import type pg from "pg";
import type { DueIndex } from "@tick/due-index";
import { sql } from "@tick/db";
import type { Logger } from "@tick/runtime";
import type { SchedulerMetrics } from "../metrics.js";

export type DueSourceMode = "index" | "polling";

/** Clock readings per calibration, at most; it stops at the first whose round trip was tight enough. */
const CALIBRATION_SAMPLES = 3;
const GOOD_UNCERTAINTY_MS = 2;

export interface DueTenants {
  tenants: sql.DueTenant[];
  mode: DueSourceMode;
  /** Index generation per tenant, read before the claim (index mode only). */
  generations: Map<string, string>;
}

/**
 * Where the dispatcher learns which tenants have due work: the Redis due index when the shard's index
 * is built and Redis answers (fast path), else Postgres directly (polling fallback, S9) while the
 * index is rebuilt from Postgres one bounded batch per round. A periodic reconciliation compares the
 * two and repairs the index.
 */
export class DueTenantSource {
  private readonly rebuilds = new Map<number, { token: string; cursor: string | null }>();
  /** How each shard found due work at its latest round (the heartbeat reports it: the status page's due-index state). */
  private readonly modes = new Map<number, DueSourceMode>();
  private lastRedisWarning = 0;
  /**
   * Database clock minus Redis clock (ms). Due times are database times and the index compares them
   * with Redis' clock, so every due check adds this: a Redis host whose clock is off must neither
   * delay nor hasten dispatch (S13). Measured at the first round and at every reconciliation.
   */
  private clockOffsetMs: number | null = null;
  /**
   * How far off that measurement may be: half the time between the two Redis reads, plus the
   * millisecond Redis' clock is truncated to. Due checks add it, so a tenant noted due just now is never
   * skipped because the offset came out a few ms low; looking due a few ms early is harmless, since the
   * claim compares due times with the database's now() and claims nothing not yet due.
   */
  private clockUncertaintyMs = 0;
  /** When the clocks were last compared (performance.now()); reconciliation compares them once a second at most, not per shard. */
  private calibratedAt = -Infinity;

  constructor(
    private readonly pool: pg.Pool,
    private readonly index: DueIndex,
    private readonly config: { rebuildBatch: number; maxTenants: number },
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
  ) {}

  /** The latest mode of each of these shards ("unknown": no round since it was acquired). */
  modesOf(shards: readonly number[]): Record<string, DueSourceMode | "unknown"> {
    return Object.fromEntries(shards.map((s) => [String(s), this.modes.get(s) ?? "unknown"]));
  }

  async find(shard: number): Promise<DueTenants> {
    try {
      if (await this.index.isBuilt(shard)) {
        const ids = await this.index.dueTenants(shard, this.config.maxTenants, await this.offset());
        const generations = new Map<string, string>();
        await Promise.all(ids.map(async (id) => generations.set(id, await this.index.generation(shard, id))));
        this.metrics.dueIndexMode.set({ shard: String(shard) }, 1);
        this.modes.set(shard, "index");
        return { tenants: await sql.tenantDispatchInfo(this.pool, ids), mode: "index", generations };
      }
      await this.rebuildStep(shard);
    } catch (err) {
      this.warnRedis(err);
    }
    this.metrics.dueIndexMode.set({ shard: String(shard) }, 0);
    this.modes.set(shard, "polling");
    this.metrics.pollingRounds.inc({ shard: String(shard) });
    const tenants = await sql.findDueTenants(this.pool, shard, this.config.maxTenants);
    this.metrics.dueTenants.set({ shard: String(shard) }, tenants.length);
    return { tenants, mode: "polling", generations: new Map() };
  }

  /**
   * After a claim committed: a tenant whose due jobs ran out gets its next due time in the index, unless
   * a writer noted a new job for it meanwhile (then the writer's lower score stands).
   */
  async settle(shard: number, tenantId: string, generation: string): Promise<void> {
    try {
      const next = await sql.nextDueAt(this.pool, shard, tenantId);
      await this.index.settle(shard, tenantId, generation, next ? next.getTime() : null);
    } catch (err) {
      this.warnRedis(err);
    }
  }

  /**
   * How long until the next job noted in these shards' indexes falls due, by the database clock (0: one
   * fell due within the last `recentMs`); null when nothing ahead is listed or Redis does not answer (the
   * dispatcher then waits its poll interval). The dispatcher sleeps this long, not a whole poll interval.
   */
  async msUntilNextDue(shards: readonly number[], recentMs: number): Promise<number | null> {
    if (shards.length === 0) return null;
    try {
      if (this.clockOffsetMs === null) await this.calibrate();
      // "Recently due" reaches back by the offset's uncertainty too: a job due just now must not look older.
      return await this.index.msUntilNextDue(shards, Math.round(this.clockOffsetMs ?? 0), recentMs + Math.ceil(this.clockUncertaintyMs));
    } catch (err) {
      this.warnRedis(err);
      return null;
    }
  }

  /**
   * Of the held shards, those a dispatch round must visit (a due tenant in the index, or no built index):
   * one Redis round trip instead of two per shard. When Redis does not answer, all of them (each then
   * polls Postgres).
   */
  async shardsToVisit(shards: readonly number[]): Promise<number[]> {
    try {
      const visit = await this.index.shardsToVisit(shards, await this.offset());
      // A shard left out has a built index listing nothing due: it finds its work through the index.
      const listed = new Set(visit);
      for (const s of shards) if (!listed.has(s)) this.modes.set(s, "index");
      return visit;
    } catch (err) {
      this.warnRedis(err);
      return [...shards];
    }
  }

  /** Tenants Postgres says are due but the index does not list: put them back (and count the repair). */
  async reconcile(shard: number): Promise<number> {
    try {
      if (!(await this.index.isBuilt(shard))) {
        this.metrics.dueIndexTenants.set({ shard: String(shard) }, 0);
        return 0;
      }
      if (performance.now() - this.calibratedAt >= 1_000) await this.calibrate();
      const inPostgres = await sql.findDueTenants(this.pool, shard, this.config.maxTenants);
      const inIndex = new Set(await this.index.dueTenants(shard, this.config.maxTenants * 10, await this.offset()));
      // Both sides of the comparison as gauges: due tenants in Postgres while the index lists none is S9.
      this.metrics.dueTenants.set({ shard: String(shard) }, inPostgres.length);
      this.metrics.dueIndexTenants.set({ shard: String(shard) }, inIndex.size);
      let repaired = 0;
      for (const t of inPostgres) {
        if (inIndex.has(t.tenant_id)) continue;
        const next = await sql.nextDueAt(this.pool, shard, t.tenant_id);
        if (next) await this.index.noteDue(shard, t.tenant_id, next.getTime());
        repaired++;
      }
      if (repaired) {
        this.metrics.dueIndexRepairs.inc({ shard: String(shard) }, repaired);
        this.logger.warn({ shard, repaired }, "due index was missing due tenants; repaired");
      }
      return repaired;
    } catch (err) {
      this.warnRedis(err);
      return 0;
    }
  }

  private async offset(): Promise<number> {
    if (this.clockOffsetMs === null) await this.calibrate();
    return (this.clockOffsetMs ?? 0) + this.clockUncertaintyMs;
  }

  /**
   * Reads both clocks, Redis' on either side of Postgres', and keeps their difference: the tightest of up
   * to `CALIBRATION_SAMPLES` readings. One reading is only as good as its round trip is even: the first
   * one after a start opens a database connection before the statement runs, and comes out ~40 ms high,
   * which would make every job look due 40 ms early to the wait below, so a tenant whose next job fell due
   * a moment ago would be taken for one held by its caps and wait the 100 ms poll (at 100 jobs/s, a p99
   * start − due of 130 ms for the first two seconds of every scheduler).
   */
  async calibrate(): Promise<number> {
    let best: { offset: number; uncertainty: number } | null = null;
    for (let i = 0; i < CALIBRATION_SAMPLES && !(best && best.uncertainty <= GOOD_UNCERTAINTY_MS); i++) {
      const before = await this.index.redisTimeMs();
      const dbNow = await sql.databaseNow(this.pool);
      const after = await this.index.redisTimeMs();
      const sample = { offset: dbNow.getTime() - (before + after) / 2, uncertainty: (after - before) / 2 + 1 };
      if (!best || sample.uncertainty < best.uncertainty) best = sample;
    }
    const { offset, uncertainty } = best!;
    if (this.clockOffsetMs === null || Math.abs(offset - this.clockOffsetMs) > 1_000) {
      this.logger[Math.abs(offset) > 1_000 ? "warn" : "info"]({ offsetMs: Math.round(offset) }, "database and Redis clocks compared; due checks use the database clock");
    }
    this.clockOffsetMs = offset;
    this.clockUncertaintyMs = uncertainty;
    this.calibratedAt = performance.now();
    return offset;
  }

  /** What the latest calibration found: database minus Redis clock, and how far off it may be (ms). */
  clock(): { offsetMs: number | null; uncertaintyMs: number } {
    return { offsetMs: this.clockOffsetMs, uncertaintyMs: this.clockUncertaintyMs };
  }

  private async rebuildStep(shard: number): Promise<void> {
    let state = this.rebuilds.get(shard);
    if (!state) {
      state = { token: await this.index.beginRebuild(shard), cursor: null };
      this.rebuilds.set(shard, state);
      this.logger.info({ shard }, "due index missing: rebuilding from Postgres, polling Postgres meanwhile");
    }
    const page = await sql.scheduledTenantsPage(this.pool, shard, state.cursor, this.config.rebuildBatch);
    for (const row of page) await this.index.noteDue(shard, row.tenant_id, row.next_due_at.getTime());
    state.cursor = page.at(-1)?.tenant_id ?? state.cursor;
    if (page.length < this.config.rebuildBatch) {
      this.rebuilds.delete(shard);
      if (await this.index.finishRebuild(shard, state.token)) {
        this.metrics.dueIndexRebuilds.inc({ shard: String(shard) });
        this.logger.info({ shard }, "due index rebuilt");
      }
    }
  }

  private warnRedis(err: unknown): void {
    if (Date.now() - this.lastRedisWarning < 10_000) return;
    this.lastRedisWarning = Date.now();
    this.logger.warn({ err: (err as Error).message }, "due index unavailable: polling Postgres");
  }
}
