import type pg from "pg";
import { commitFailure } from "./commit-outcome.js";

/**
 * Runs `fn` in one transaction on a dedicated client; rolls back on any error. While the client is
 * checked out it has an 'error' listener: pg emits 'error' on a client whose connection breaks (a reset,
 * a terminated backend), and with no listener that would crash the process. The query in flight
 * rejects anyway; a broken client is destroyed instead of going back to the pool. A connection lost
 * during COMMIT itself throws CommitOutcomeUnknownError: the transaction may have committed.
 * `opening` is a first statement sent with BEGIN (see there).
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient, opened: pg.QueryResult | null) => Promise<T>, opening?: string): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on("error", onError);
  try {
    // `opening`, a statement without parameters, goes with BEGIN in one round trip (the simple protocol
    // takes several statements); fn gets its result.
    let opened: pg.QueryResult | null = null;
    if (opening === undefined) await client.query("BEGIN");
    else opened = ((await client.query(`BEGIN; ${opening}`)) as unknown as pg.QueryResult[])[1]!;
    const result = await fn(client, opened);
    // A connection lost here leaves the outcome unknown (CommitOutcomeUnknownError), not "rolled back".
    await client.query("COMMIT").catch((err: unknown) => {
      throw commitFailure(err);
    });
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch((rollbackErr: Error) => {
      broken ??= rollbackErr;
    });
    throw err;
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}
