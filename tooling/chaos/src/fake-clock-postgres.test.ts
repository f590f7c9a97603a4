import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeClockPostgres } from "./fake-clock-postgres.js";

// The chaos suite's database runs under libfaketime, which stops the server's own timers (deadlock_timeout
// among them): the module breaks deadlocks itself. Needs Debian's faketime and PostgreSQL server binaries, as
// the chaos suite does (.ci/run installs both); without them the module returns null and this says so.
describe("the fake-clock Postgres", () => {
  let server: Awaited<ReturnType<typeof startFakeClockPostgres>> = null;
  const logged: string[] = [];
  beforeAll(async () => {
    server = await startFakeClockPostgres("2027-03-28 00:58:20", (line) => logged.push(line));
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("runs on the injected clock, whose timers do not fire, and breaks a deadlock as the server would", { timeout: 60_000 }, async () => {
    if (!server) throw new Error("libfaketime or the PostgreSQL server binaries are missing (apt-get install faketime postgresql-15)");
    const a = new pg.Client({ connectionString: server.url });
    const b = new pg.Client({ connectionString: server.url });
    await a.connect();
    await b.connect();
    try {
      const { rows } = await a.query<{ year: number }>("SELECT extract(year FROM now())::int AS year");
      expect(rows[0]!.year).toBe(2027);
      // The reason for the breaker: statement_timeout does not fire under libfaketime.
      await a.query("SET statement_timeout = '200ms'");
      await a.query("SELECT pg_sleep(0.6)");
      await a.query("RESET statement_timeout");

      await a.query("CREATE TABLE t (id int PRIMARY KEY, n int); INSERT INTO t VALUES (1, 0), (2, 0)");
      await a.query("BEGIN");
      await b.query("BEGIN");
      await a.query("UPDATE t SET n = n + 1 WHERE id = 1");
      await b.query("UPDATE t SET n = n + 1 WHERE id = 2");
      const outcomes = await Promise.allSettled([a.query("UPDATE t SET n = n + 1 WHERE id = 2"), b.query("UPDATE t SET n = n + 1 WHERE id = 1")]);
      const failed = outcomes.filter((o) => o.status === "rejected");
      expect(failed).toHaveLength(1);
      expect(String((failed[0] as PromiseRejectedResult).reason)).toMatch(/canceling statement due to user request/);
      expect(server.deadlocksBroken()).toBe(1);
      expect(logged.some((l) => l.startsWith("deadlock broken"))).toBe(true);
    } finally {
      await a.end();
      await b.end();
    }
  });
});
