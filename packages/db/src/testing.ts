import { createHash, randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { DB_PACKAGE_DIR, migrateDeploy } from "./migrate.js";
import type { NewJob } from "./sql/jobs.js";

/**
 * A job for `sql.insertJobs` in tests: due now, a POST with no body, no key, dependency or callback, the
 * queue's usual limits; `over` sets what a test cares about. One fixture, so a column added to NewJob is
 * added here once.
 */
export function newTestJob(queueId: string, over: Partial<NewJob> = {}): NewJob {
  return {
    id: randomUUID(),
    queue_id: queueId,
    run_at: null,
    delay_ms: 0,
    expires_at: null,
    priority: 0,
    idempotency_key: null,
    request_hash: null,
    method: "POST",
    url: "https://example.com/hook",
    headers: {},
    body: null,
    timeout_ms: 30_000,
    max_attempts: 5,
    backoff: { strategy: "exponential", baseMs: 1000, maxMs: 60_000, jitter: "full" },
    dependency_key: null,
    callback_url: null,
    metadata: {},
    ...over,
  };
}

/**
 * Test isolation: every test gets its own database, created in ~0.1 s as a copy of a template that
 * was migrated once (per migration set) with the real `prisma migrate deploy`.
 */
export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function adminUrl(baseUrl: string): string {
  const u = new URL(baseUrl);
  u.pathname = "/postgres";
  return u.toString();
}

function withDatabase(baseUrl: string, name: string): string {
  const u = new URL(baseUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

function migrationsFingerprint(): string {
  const dir = path.resolve(DB_PACKAGE_DIR, "../../prisma/migrations");
  const hash = createHash("sha256");
  for (const entry of fs.readdirSync(dir, { recursive: true }).map(String).sort()) {
    const file = path.join(dir, entry);
    if (fs.statSync(file).isFile()) hash.update(entry).update(fs.readFileSync(file));
  }
  return hash.digest("hex").slice(0, 12);
}

async function withAdmin<T>(baseUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl(baseUrl) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function ensureTemplate(baseUrl: string): Promise<string> {
  const template = `tick_tpl_${migrationsFingerprint()}`;
  return withAdmin(baseUrl, async (admin) => {
    // Serialise template creation across parallel test workers and packages.
    await admin.query("SELECT pg_advisory_lock(hashtext('tick_test_template'))");
    try {
      const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [template]);
      if (exists.rowCount === 0) {
        const building = `${template}_building`;
        await admin.query(`DROP DATABASE IF EXISTS "${building}"`);
        await migrateDeploy(withDatabase(baseUrl, building));
        await admin.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`);
      }
      return template;
    } finally {
      await admin.query("SELECT pg_advisory_unlock(hashtext('tick_test_template'))");
    }
  });
}

/** `baseUrl` is any URL of the test server (DATABASE_URL); only its host and credentials are used. */
export async function createTestDatabase(baseUrl: string): Promise<TestDatabase> {
  const template = await ensureTemplate(baseUrl);
  const name = `tick_test_${randomBytes(6).toString("hex")}`;
  await withAdmin(baseUrl, async (admin) => {
    for (let tries = 0; ; tries++) {
      try {
        await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        return;
      } catch (err) {
        // Two copies of one template at the same instant: Postgres refuses the second; try again.
        if (tries < 20 && /being accessed by other users/.test(String(err))) {
          await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
          continue;
        }
        throw err;
      }
    }
  });
  return {
    url: withDatabase(baseUrl, name),
    name,
    drop: () => withAdmin(baseUrl, async (admin) => void (await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))),
  };
}

/** The server tests run against: DATABASE_URL when set (CI, the test script), else local defaults. */
export function testServerUrl(): string {
  // eslint-disable-next-line no-restricted-properties -- test support: tests are not an app with a config schema
  return process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
}
