// Shard leadership (S2, S8, S18). Every time decision here uses the database clock (now()), never
// the caller's, so schedulers with skewed clocks agree on who holds what (S13).
import pg from "pg";
import { FENCE_FLOOR } from "./restore-fence.js";
import type { Queryable } from "./types.js";

export interface HeldShard {
  shard: number;
  epoch: string;
  expiresAt: Date;
}

export interface AcquiredShard extends HeldShard {
  /** Who held the lease before (it had expired: a takeover), or null for a free shard (released or new). */
  previousHolder: string | null;
}

/**
 * Creates the lease rows 0..count-1 if missing (idempotent; every scheduler runs it at start). A row made after a
 * restore fence starts at its floor: the shard may have existed after the restore point, its epochs seen.
 */
export async function ensureShardLeases(db: Queryable, count: number): Promise<void> {
  await db.query(`INSERT INTO shard_leases (shard, epoch) SELECT generate_series(0, $1::int - 1), ${FENCE_FLOOR} ON CONFLICT DO NOTHING`, [count]);
}

/**
 * Takes up to `limit` shards that are free or whose lease has expired, bumping each one's epoch, so
 * anything the previous holder still tries to write is recognisably stale. Says who held each before (a
 * released shard has no holder; an expired lease still names its holder: a takeover).
 */
export async function acquireShards(
  db: Queryable,
  holder: string,
  region: string,
  ttlMs: number,
  limit: number,
  shardCount: number,
  /** Only these shards, taken in this order (a scheduler's home region's first, S18); all below shardCount when omitted. */
  onlyShards?: readonly number[],
): Promise<AcquiredShard[]> {
  if (limit <= 0 || onlyShards?.length === 0) return [];
  const { rows } = await db.query<{ shard: number; epoch: string; expires_at: Date; previous_holder: string | null }>(
    `UPDATE shard_leases l
        SET holder = $1, region = $2, epoch = l.epoch + 1, acquired_at = now(), renewed_at = now(),
            expires_at = now() + make_interval(secs => $3 / 1000.0)
       FROM (SELECT shard, holder AS previous_holder FROM shard_leases
              WHERE shard < $5 AND ($6::int[] IS NULL OR shard = ANY($6::int[]))
                AND (holder IS NULL OR expires_at IS NULL OR expires_at <= now())
              ORDER BY array_position($6::int[], shard), shard
              LIMIT $4
              FOR UPDATE SKIP LOCKED) p
      WHERE l.shard = p.shard
      RETURNING l.shard, l.epoch, l.expires_at, p.previous_holder`,
    [holder, region, ttlMs, limit, shardCount, onlyShards ?? null],
  );
  return rows.map((r) => ({ shard: r.shard, epoch: String(r.epoch), expiresAt: r.expires_at, previousHolder: r.previous_holder }));
}

/** Extends the leases this holder still has at the epochs it knows; returns the ones it kept. */
export async function renewShards(db: Queryable, holder: string, held: { shard: number; epoch: string }[], ttlMs: number): Promise<HeldShard[]> {
  if (held.length === 0) return [];
  const { rows } = await db.query<{ shard: number; epoch: string; expires_at: Date }>(
    `UPDATE shard_leases l
        SET expires_at = now() + make_interval(secs => $2 / 1000.0), renewed_at = now()
       FROM unnest($3::int[], $4::bigint[]) AS h(shard, epoch)
      WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.holder = $1 AND l.expires_at > now()
      RETURNING l.shard, l.epoch, l.expires_at`,
    [holder, ttlMs, held.map((h) => h.shard), held.map((h) => h.epoch)],
  );
  return rows.map((r) => ({ shard: r.shard, epoch: String(r.epoch), expiresAt: r.expires_at }));
}

/** Gives shards back at once (clean shutdown, rebalancing) so another scheduler need not wait out the TTL. */
export async function releaseShards(db: Queryable, holder: string, held: { shard: number; epoch: string }[]): Promise<number> {
  if (held.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE shard_leases l SET holder = NULL, expires_at = now()
       FROM unnest($2::int[], $3::bigint[]) AS h(shard, epoch)
      WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.holder = $1`,
    [holder, held.map((h) => h.shard), held.map((h) => h.epoch)],
  );
  return rowCount ?? 0;
}

/** What a process says about itself in its heartbeat, for the operator status page. */
export interface NodeStatus {
  /** The app's package version. */
  version: string;
  /** Where its /readyz answers, as it registered it (the console fetches only these). */
  healthUrl: string | null;
  startedAt: Date;
}

/**
 * Records that this scheduler is alive (until now() + ttl), so others count it when balancing; with its
 * status for the status page, and how each held shard finds due work ("index" or "polling").
 */
export async function heartbeatSchedulerNode(
  db: Queryable,
  id: string,
  region: string,
  ttlMs: number,
  status?: NodeStatus & { dueIndex: Record<string, string> },
): Promise<void> {
  await db.query(
    `INSERT INTO scheduler_nodes (id, region, heartbeat_at, expires_at, version, health_url, started_at, due_index)
     VALUES ($1, $2, now(), now() + make_interval(secs => $3 / 1000.0), $4, $5, $6, $7)
     ON CONFLICT (id) DO UPDATE SET region = EXCLUDED.region, heartbeat_at = now(), expires_at = EXCLUDED.expires_at,
       version = EXCLUDED.version, health_url = EXCLUDED.health_url, started_at = EXCLUDED.started_at, due_index = EXCLUDED.due_index`,
    [id, region, ttlMs, status?.version ?? null, status?.healthUrl ?? null, status?.startedAt ?? null, status ? JSON.stringify(status.dueIndex) : null],
  );
}

export async function removeSchedulerNode(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM scheduler_nodes WHERE id = $1`, [id]);
}

/** Live schedulers, their region and how many shards each holds now (0 for a newcomer), for balancing. */
export async function liveSchedulers(db: Queryable): Promise<Map<string, { held: number; region: string }>> {
  const { rows } = await db.query<{ id: string; n: number; region: string | null }>(
    `SELECT n.id, n.region, (SELECT count(*)::int FROM shard_leases l WHERE l.holder = n.id AND l.expires_at > now()) AS n
       FROM scheduler_nodes n WHERE n.expires_at > now()`,
  );
  return new Map(rows.map((r) => [r.id, { held: r.n, region: r.region ?? "" }]));
}

/**
 * The fence, first statement of every scheduler write transaction for a shard, sent with BEGIN in one
 * round trip (inTransaction's `opening`): one row only while this holder still holds the shard at this
 * epoch by the database clock. FOR SHARE makes a takeover's UPDATE wait for the transaction, so the lease
 * cannot change hands between the check and COMMIT. The values are inlined: shard and epoch must be
 * integers, the holder is quoted by pg's escapeLiteral.
 */
export function shardFenceStatement(shard: number, holder: string, epoch: string): string {
  if (!Number.isSafeInteger(shard) || !/^\d+$/.test(epoch)) throw new Error(`bad shard lease: shard ${shard}, epoch ${epoch}`);
  return `SELECT 1 FROM shard_leases WHERE shard = ${shard} AND holder = ${pg.escapeLiteral(holder)} AND epoch = ${epoch} AND expires_at > now() FOR SHARE`;
}

/** A shard as a scheduler believes it holds it, for the read-only probes that say which shards have work. */
export interface ShardProbe {
  shard: number;
  epoch: string;
}

/** What a probe found: shards with work, and shards whose lease this holder no longer has at that epoch. */
export interface ProbeResult {
  busy: Set<number>;
  stale: Set<number>;
}

/**
 * Runs a probe: `work` is an SQL condition on `s.shard` (true when the shard has something to do); the
 * statement also checks each lease as the fence would (without locking: nothing is written), so a stale
 * scheduler learns it is stale even on a shard with nothing to do. Parameters after $3 are `params`.
 */
export async function probeShards(db: Queryable, holder: string, leases: readonly ShardProbe[], work: string, params: unknown[]): Promise<ProbeResult> {
  const result: ProbeResult = { busy: new Set(), stale: new Set() };
  if (leases.length === 0) return result;
  const { rows } = await db.query<{ shard: number; held: boolean; busy: boolean }>(
    `SELECT s.shard,
            EXISTS (SELECT 1 FROM shard_leases l WHERE l.shard = s.shard AND l.holder = $3 AND l.epoch = s.epoch AND l.expires_at > now()) AS held,
            (${work}) AS busy
       FROM unnest($1::int[], $2::bigint[]) AS s(shard, epoch)`,
    [leases.map((l) => l.shard), leases.map((l) => l.epoch), holder, ...params],
  );
  for (const r of rows) {
    if (!r.held) result.stale.add(r.shard);
    else if (r.busy) result.busy.add(r.shard);
  }
  return result;
}

/** Counts a write refused by the fence (a stale leader, S8); visible per shard. */
export async function recordStaleWrite(db: Queryable, shard: number): Promise<void> {
  await db.query(`UPDATE shard_leases SET stale_writes_rejected = stale_writes_rejected + 1 WHERE shard = $1`, [shard]);
}
