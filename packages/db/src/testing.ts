import { createHash, randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { generateApiKey } from "./api-keys.js";
import type { PrismaClient } from "./generated/prisma/client.js";
import { migrateDeploy, MIGRATIONS_DIR } from "./migrate.js";
import { shardForTenant } from "./shards.js";
import type { NewJob } from "./sql/jobs.js";
import type { Queryable } from "./sql/types.js";

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
    flow_key: null,
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
  const hash = createHash("sha256");
  for (const entry of fs.readdirSync(MIGRATIONS_DIR, { recursive: true }).map(String).sort()) {
    const file = path.join(MIGRATIONS_DIR, entry);
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

/** Where test fixtures write: a pg pool or client, or a Prisma client (for suites that hold only one). */
export type TestDb = Queryable | Pick<PrismaClient, "$queryRawUnsafe">;

async function rowsOf<T>(db: TestDb, text: string, values: unknown[]): Promise<T[]> {
  if ("query" in db) return (await db.query(text, values)).rows as T[];
  return db.$queryRawUnsafe<T[]>(text, ...values);
}

export type TestKeyRole = "owner" | "admin" | "operator" | "viewer";

export interface TestApiKeyOptions {
  /** Default ["admin"]. */
  scopes?: string[];
  /** The most the key may do; default admin (the role of a key an admin made). */
  role?: TestKeyRole;
  /** Default "test key". */
  name?: string;
}

/** An API key of the tenant, stored as the console stores one (prefix and hash); `apiKey` is the secret to present. */
export async function createTestApiKey(db: TestDb, tenantId: string, options: TestApiKeyOptions = {}): Promise<{ apiKey: string; keyId: string }> {
  const { key, prefix, hash } = generateApiKey();
  const [row] = await rowsOf<{ id: string }>(
    db,
    `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes, role)
     VALUES (gen_random_uuid(), $1::uuid, $2, $3, $4, $5::text[], $6::role) RETURNING id::text`,
    [tenantId, options.name ?? "test key", prefix, hash, options.scopes ?? ["admin"], options.role ?? "admin"],
  );
  return { apiKey: key, keyId: row!.id };
}

export interface TestTenantOptions {
  /** Default a random UUID. */
  id?: string;
  /** Default the shard the id hashes to among `shardCount`. */
  shard?: number;
  /** The deployment's shard count, for the default shard; default 16 (TICK_SHARDS' default). */
  shardCount?: number;
  /** Limits; each left to the column's default unless given. */
  weight?: number;
  admissionRate?: number;
  admissionBurst?: number;
  maxPendingJobs?: number;
  maxInFlight?: number;
  /** The id of the tenant's queue "default"; default a random UUID. */
  queueId?: string;
  /** Also make a first key (as a sign-up does: role owner unless given). */
  apiKey?: TestApiKeyOptions;
}

export interface TestTenant {
  id: string;
  slug: string;
  shard: number;
  /** The tenant's queue "default". */
  queueId: string;
}

/**
 * A tenant in a test database (slug and name `t-` and the id's first 8 characters) with its queue
 * "default", and with `apiKey` a first API key too. One fixture for every suite, so a column the
 * tenant must have is added here once.
 */
export async function createTestTenant(db: TestDb, options: TestTenantOptions & { apiKey: TestApiKeyOptions }): Promise<TestTenant & { apiKey: string; keyId: string }>;
export async function createTestTenant(db: TestDb, options?: TestTenantOptions): Promise<TestTenant>;
export async function createTestTenant(db: TestDb, options: TestTenantOptions = {}): Promise<TestTenant & Partial<{ apiKey: string; keyId: string }>> {
  const id = options.id ?? randomUUID();
  const slug = `t-${id.slice(0, 8)}`;
  const shard = options.shard ?? shardForTenant(id, options.shardCount ?? 16);
  const columns = ["id", "slug", "name", "shard"];
  const values: unknown[] = [id, slug, slug, shard];
  const casts = ["uuid", "text", "text", "int"];
  const limits = [
    ["weight", options.weight, "int"],
    ["admission_rate", options.admissionRate, "float8"],
    ["admission_burst", options.admissionBurst, "int"],
    ["max_pending_jobs", options.maxPendingJobs, "int"],
    ["max_in_flight", options.maxInFlight, "int"],
  ] as const;
  for (const [column, value, cast] of limits) {
    if (value === undefined) continue;
    columns.push(column);
    values.push(value);
    casts.push(cast);
  }
  await rowsOf(db, `INSERT INTO tenants (${columns.join(", ")}, updated_at) VALUES (${casts.map((c, i) => `$${i + 1}::${c}`).join(", ")}, now())`, values);
  const [queue] = await rowsOf<{ id: string }>(
    db,
    `INSERT INTO queues (id, tenant_id, name, updated_at) VALUES ($1::uuid, $2::uuid, 'default', now()) RETURNING id::text`,
    [options.queueId ?? randomUUID(), id],
  );
  const tenant: TestTenant = { id, slug, shard, queueId: queue!.id };
  return options.apiKey ? { ...tenant, ...(await createTestApiKey(db, id, { ...options.apiKey, role: options.apiKey.role ?? "owner" })) } : tenant;
}
