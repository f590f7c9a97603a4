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
    const value = await inTransaction(pool, async (client) => {
      if (!(await sql.holdsShardLease(client, lease.shard, holder, lease.epoch))) throw new StaleLease();
      return fn(client);
    });
    return { ok: true, value };
  } catch (err) {
    if (!(err instanceof StaleLease)) throw err;
    await sql.recordStaleWrite(pool, lease.shard);
    onStale(lease);
    return { ok: false };
  }
}
