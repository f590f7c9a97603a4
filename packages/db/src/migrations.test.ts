import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DB_PACKAGE_DIR, runPrismaCli } from "./migrate.js";
import { createTestDatabase, testServerUrl, type TestDatabase } from "./testing.js";

const schemaPath = path.resolve(DB_PACKAGE_DIR, "../../prisma/schema.prisma");

/** `prisma migrate diff` from the migrated database to a schema file; exit 0 = no drift, 2 = drift. */
const diffAgainst = (db: TestDatabase, schema: string) =>
  runPrismaCli(["migrate", "diff", "--from-config-datasource", "--to-schema", schema, "--script", "--exit-code"], db.url);

describe("migrations", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    // The template behind createTestDatabase is built by the real `prisma migrate deploy`.
    db = await createTestDatabase(testServerUrl());
  }, 120_000);
  afterAll(async () => db?.drop());

  /** Runs `fn` with a client of the migrated database, closed afterwards. */
  const withClient = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const { default: pgModule } = await import("pg");
    const client = new pgModule.Client({ connectionString: db.url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  it("leave the database exactly as schema.prisma describes it (no drift)", async () => {
    const result = await diffAgainst(db, schemaPath);
    expect(result.stdout.trim() === "" || result.stdout.includes("empty migration")).toBe(true);
    expect(result.code).toBe(0);
  }, 60_000);

  it("the drift check notices a schema change that has no migration", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-drift-"));
    const changed = path.join(dir, "schema.prisma");
    const original = fs.readFileSync(schemaPath, "utf8");
    fs.writeFileSync(changed, original.replace("  weight         Int      @default(1)\n", "  weight         Int      @default(1)\n  driftProbe     Int?     @map(\"drift_probe\")\n"));
    try {
      const result = await diffAgainst(db, changed);
      expect(result.code).toBe(2);
      expect(result.stdout).toContain("drift_probe");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("keep history's tables and views column for column with the hot tables (the move copies every column)", () =>
    withClient(async (client) => {
      const columns = async (schema: string, table: string) =>
        (
          await client.query<{ c: string }>(
            `SELECT column_name || ' ' || data_type AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
            [schema, table],
          )
        ).rows.map((r) => r.c);
      const jobs = await columns("public", "jobs");
      const attempts = await columns("public", "attempts");
      expect(jobs.length).toBeGreaterThan(20);
      // A migration that adds a column to jobs or attempts must add it to history (and recreate the views). The hot
      // table orders its columns by what the hot path changes, history by when they were added: the move names them.
      const sorted = (cs: string[]) => [...cs].sort();
      expect(sorted(await columns("history", "jobs"))).toEqual(sorted(jobs));
      // history.attempts has job_finished_at before some of attempts' columns (message_id); the move names its columns.
      const historyAttempts = await columns("history", "attempts");
      expect(historyAttempts.filter((c) => c !== "job_finished_at timestamp with time zone")).toEqual(attempts);
      expect(historyAttempts).toContain("job_finished_at timestamp with time zone");
      expect(await columns("history", "jobs_all")).toEqual(await columns("history", "jobs"));
      expect(await columns("history", "attempts_all")).toEqual(attempts);
    }));

  // A new row version on its old page is logged without the bytes that match before the first change and after
  // the last: columns the hot path changes, placed elsewhere, would widen every claim's, start's and end's record.
  it("put what a claim, a start and a completion change together at the end of the job row", () =>
    withClient(async (client) => {
      const { rows } = await client.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'jobs' ORDER BY ordinal_position`,
      );
      const order = rows.map((r) => r.column_name);
      const changing = ["status", "version", "attempt_count", "fencing_token", "current_attempt_id", "updated_at", "finished_at", "last_error", "result"];
      const at = changing.map((c) => order.indexOf(c)).sort((a, b) => a - b);
      expect(at[0]).toBeGreaterThan(20);
      expect(at.at(-1)! - at[0]!).toBe(changing.length - 1);
      const { rows: options } = await client.query<{ relname: string; reloptions: string[] }>(
        `SELECT relname, reloptions FROM pg_class WHERE oid IN ('public.jobs'::regclass, 'public.attempts'::regclass) ORDER BY relname`,
      );
      // Room on the page for those versions (jobs) and for an attempt's HOT updates.
      expect(options.map((o) => [o.relname, o.reloptions.find((r) => r.startsWith("fillfactor="))])).toEqual([
        ["attempts", "fillfactor=35"],
        ["jobs", "fillfactor=50"],
      ]);
    }));

  it("created the hot-path partial indexes", () =>
    withClient(async (client) => {
      const { rows } = await client.query<{ indexdef: string }>(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'jobs_due_idx'",
      );
      expect(rows[0]?.indexdef).toMatch(/WHERE \(\(status = 'scheduled'::job_status\) AND \(flow_key IS NULL\)\)/);
    }));
});
