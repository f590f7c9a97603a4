import type { Queryable } from "./types.js";

/** The database clock: Tick's one time reference for due times, leases, pacing and expiry (S13). */
export async function databaseNow(db: Queryable): Promise<Date> {
  const { rows } = await db.query<{ now: Date }>(`SELECT now() AS now`);
  return rows[0]!.now;
}
