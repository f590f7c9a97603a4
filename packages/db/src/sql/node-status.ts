import type { Queryable } from "./types.js";
import type { NodeStatus } from "./shard-leases.js";

/**
 * Records that this worker is alive until now() + ttl (database time), with its status, for the operator
 * status page. Rows of workers gone for an hour (a crash leaves its row) are pruned by the same
 * statement, so the table stays as small as the fleet.
 */
export async function heartbeatWorkerNode(db: Queryable, id: string, region: string, ttlMs: number, status: NodeStatus): Promise<void> {
  await db.query(
    `WITH pruned AS (DELETE FROM worker_nodes WHERE expires_at < now() - interval '1 hour' AND id <> $1)
     INSERT INTO worker_nodes (id, region, version, health_url, started_at, heartbeat_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, now(), now() + make_interval(secs => $6 / 1000.0))
     ON CONFLICT (id) DO UPDATE SET region = EXCLUDED.region, version = EXCLUDED.version, health_url = EXCLUDED.health_url,
       started_at = EXCLUDED.started_at, heartbeat_at = now(), expires_at = EXCLUDED.expires_at`,
    [id, region, status.version, status.healthUrl, status.startedAt, ttlMs],
  );
}

/** Whether any worker heartbeats (its row not past its expiry, database time). */
export async function anyWorkerAlive(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ alive: boolean }>(`SELECT EXISTS (SELECT 1 FROM worker_nodes WHERE expires_at > now()) AS alive`);
  return rows[0]?.alive ?? false;
}

/** A clean shutdown: the worker leaves the status page at once. */
export async function removeWorkerNode(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM worker_nodes WHERE id = $1`, [id]);
}

export interface ShardLeaseStatusRow {
  shard: number;
  holder: string | null;
  region: string | null;
  epoch: string;
  expires_at: Date | null;
  acquired_at: Date | null;
  /** The lease is held now, by the database clock. */
  live: boolean;
}

/** Every shard's lease as the database has it (the fence's own table), for the status page. */
export async function shardLeaseStatus(db: Queryable): Promise<ShardLeaseStatusRow[]> {
  const { rows } = await db.query<ShardLeaseStatusRow & { epoch: string }>(
    `SELECT shard, holder, region, epoch::text AS epoch, expires_at, acquired_at,
            (holder IS NOT NULL AND expires_at > now()) AS live
       FROM shard_leases ORDER BY shard`,
  );
  return rows;
}

export interface NodeStatusRow {
  role: "scheduler" | "worker";
  id: string;
  region: string | null;
  version: string | null;
  health_url: string | null;
  started_at: Date | null;
  heartbeat_at: Date;
  expires_at: Date;
  /** Its heartbeat has not expired, by the database clock. */
  live: boolean;
  /** Schedulers: "index" or "polling" per held shard (null for workers and before the first round). */
  due_index: Record<string, string> | null;
}

/**
 * Schedulers and workers that sent a heartbeat within `recentMs` (a process gone a little while stays
 * listed, marked not live, so a crash shows on the page instead of a row silently vanishing).
 */
export async function listNodeStatus(db: Queryable, recentMs: number): Promise<NodeStatusRow[]> {
  const { rows } = await db.query<NodeStatusRow>(
    `SELECT 'scheduler' AS role, id, region, version, health_url, started_at, heartbeat_at, expires_at, expires_at > now() AS live, due_index
       FROM scheduler_nodes WHERE expires_at > now() - make_interval(secs => $1 / 1000.0)
     UNION ALL
     SELECT 'worker', id, region, version, health_url, started_at, heartbeat_at, expires_at, expires_at > now(), NULL
       FROM worker_nodes WHERE expires_at > now() - make_interval(secs => $1 / 1000.0)
     ORDER BY 1, 2`,
    [recentMs],
  );
  return rows;
}
