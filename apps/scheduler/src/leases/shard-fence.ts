import type pg from "pg";
import { inTransaction, sql } from "@tick/db";
import type { HeldLease } from "./shard-lease-manager.js";

class StaleLease extends Error {}

export type FencedResult<T> = { ok: true; value: T } | { ok: false };

/**
 * Runs `fn` in one transaction whose first statement checks (and share-locks) the shard lease at the
 * epoch this scheduler holds. If another scheduler took the shard meanwhile (this one was paused past
 * its TTL, S8), nothing of `fn` runs or commits, and the refusal is counted on the lease row.
 */
export async function withShardFence<T>(
  pool: pg.Pool,
  holder: string,
  lease: HeldLease,
  fn: (client: pg.PoolClient) => Promise<T>,
  onStale: (lease: HeldLease) => void = () => {},
): Promise<FencedResult<T>> {
  try {
    // The fence goes with BEGIN, in one round trip: every dispatch round, reaper or maintenance pass is
    // one such transaction per shard.
    const value = await inTransaction(
      pool,
      async (client, fence) => {
        if ((fence?.rowCount ?? 0) === 0) throw new StaleLease();
        return fn(client);
      },
      sql.shardFenceStatement(lease.shard, holder, lease.epoch),
    );
    return { ok: true, value };
  } catch (err) {
    if (!(err instanceof StaleLease)) throw err;
    await refuseStale(pool, lease, onStale);
    return { ok: false };
  }
}

/**
 * A shard found stale by a probe (sql.probeShards) is refused as the fence would have refused its write:
 * counted on the lease row and reported to `onStale`.
 */
export async function refuseStale(pool: pg.Pool, lease: HeldLease, onStale: (lease: HeldLease) => void): Promise<void> {
  await sql.recordStaleWrite(pool, lease.shard);
  onStale(lease);
}
