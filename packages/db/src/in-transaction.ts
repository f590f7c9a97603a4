import type pg from "pg";
import { commitFailure } from "./commit-outcome.js";

/**
 * Runs `fn` in one transaction on a dedicated client; rolls back on any error. While the client is
 * checked out it has an 'error' listener: pg emits 'error' on a client whose connection breaks (a reset,
 * a terminated backend), and with no listener that would crash the process. The query in flight
 * rejects anyway; a broken client is destroyed instead of going back to the pool. A connection lost
 * during COMMIT itself throws CommitOutcomeUnknownError: the transaction may have committed.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    const result = await fn(client);
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
