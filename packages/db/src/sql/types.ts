import type pg from "pg";

/** Anything that runs a query: a pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, "query">;

/** Runs `fn` in one transaction on a dedicated client; rolls back on any error. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
