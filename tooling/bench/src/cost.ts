import type { Redis } from "ioredis";
import pg from "pg";

/**
 * What a run cost the stores: Postgres commits in the system's own database (pg_stat_database), WAL
 * bytes written cluster-wide (pg_current_wal_lsn; nothing else may run meanwhile) and Redis commands
 * (INFO commandstats, server-wide). Snapshot before, snapshot after, divide by the jobs.
 */
export interface CostSnapshot {
  commits: number;
  walLsn: string;
  redisCalls: number;
}

export interface CostPerJob {
  commitsPerJob: number;
  walBytesPerJob: number;
  redisCommandsPerJob: number;
}

export async function snapshotCost(databaseUrl: string, redis: Redis | null): Promise<CostSnapshot> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Backends flush their transaction counts to the shared statistics at most once a second.
    await new Promise((r) => setTimeout(r, 1_100));
    const { rows } = await client.query<{ commits: string; lsn: string }>(
      `SELECT xact_commit::text AS commits, pg_current_wal_lsn()::text AS lsn FROM pg_stat_database WHERE datname = current_database()`,
    );
    return { commits: Number(rows[0]!.commits), walLsn: rows[0]!.lsn, redisCalls: redis ? await redisCalls(redis) : 0 };
  } finally {
    await client.end();
  }
}

async function redisCalls(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let calls = 0;
  for (const m of info.matchAll(/calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

export async function costPerJob(databaseUrl: string, before: CostSnapshot, after: CostSnapshot, jobs: number): Promise<CostPerJob> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>(`SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS bytes`, [after.walLsn, before.walLsn]);
    // The snapshots' own statements (one commit each) are not the system's.
    const commits = after.commits - before.commits - 1;
    return {
      commitsPerJob: round(commits / jobs),
      walBytesPerJob: Math.round(Number(rows[0]!.bytes) / jobs),
      redisCommandsPerJob: round((after.redisCalls - before.redisCalls) / jobs),
    };
  } finally {
    await client.end();
  }
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
