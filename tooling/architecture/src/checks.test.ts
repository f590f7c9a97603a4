// The test of the architecture test: each check, run over a few in-memory files, reports a planted
// violation at its file and line (the line marked "violation"), and stays quiet on the allowed forms.
import { describe, expect, it } from "vitest";
import { INITIAL_JOB_STATE, JOB_STATES, TERMINAL_STATES, TRANSITIONS } from "../../../packages/core/src/job-state-machine.js";
import { JOB_STATUS_WRITES } from "../../../packages/db/src/sql/job-status-writes.js";
import { applyAllowlist, matchesGlob } from "./allowlist.js";
import { findAppSourceImports } from "./find-app-source-imports.js";
import { findDuplicatedConstants } from "./find-duplicated-constants.js";
import { findConsoleDataPathViolations } from "./find-console-data-path.js";
import { findEnvReads } from "./find-env-reads.js";
import { checkStatusWriteRegistry, findUndeclaredStatusWrites, REGISTRY_FILE, type StatusWriteRegistry } from "./find-job-status-writes.js";
import { CONTRACT_ROUTES, findRouteMismatches } from "./find-route-mismatches.js";
import { findSqlOutsideDb } from "./find-sql-outside-db.js";
import type { Finding, SourceFile } from "./source-tree.js";

const file = (path: string, ...lines: string[]): SourceFile => ({ path, text: lines.join("\n") });
/** Where a planted file says its violation is. */
const marked = (f: SourceFile) => `${f.path}:${f.text.split("\n").findIndex((l) => l.includes("violation")) + 1}`;
const places = (findings: Finding[]) => findings.map((f) => `${f.file}:${f.line}`);

describe("env-reads", () => {
  it.each([
    ["process.env.X", "export const skew = Number(process.env.TICK_SKEW); // violation"],
    ['process["env"]', 'export const env = process["env"]; // violation'],
    ["{ env } = process", "const { env } = process; // violation"],
    ['import { env } from "node:process"', 'import { env } from "node:process"; // violation'],
  ])("reports %s in a domain package", (_, line) => {
    const planted = file("packages/core/src/clock.ts", "// reads the skew", line, "export {};");
    expect(places(findEnvReads([planted]))).toEqual([marked(planted)]);
  });

  it("allows the env modules and composition roots, and ignores comments and strings", () => {
    const files = [
      file("apps/worker/src/env.ts", "export const env = parseEnv(schema, process.env);"),
      file("apps/scheduler/src/main.ts", "run(process.env);"),
      file("apps/console/src/server/env.ts", "cached ??= parseEnv(consoleEnvSchema, process.env);"),
      file("packages/runtime/src/run-service.ts", "/** passed by the composition root (the only reader of process.env) */", 'const doc = "process.env";'),
    ];
    expect(findEnvReads(files)).toEqual([]);
  });
});

describe("console-data-path", () => {
  it.each([
    ["a page importing @tick/db", "apps/console/src/app/settings/page.tsx", 'import { sql } from "@tick/db"; // violation'],
    ["a route handler importing the context", "apps/console/src/app/api/v1/jobs/route.ts", 'import { getContext } from "@/server/context"; // violation'],
    ["an action importing the context relatively", "apps/console/src/app/actions.ts", 'import { getContext } from "../server/context"; // violation'],
    ["a page importing pg", "apps/console/src/app/jobs/page.tsx", 'import pg from "pg"; // violation'],
    ["a re-export of the Prisma client", "apps/console/src/app/lib.ts", 'export { createPrismaClient } from "@tick/db/testing"; // violation'],
  ])("reports %s", (_, path, line) => {
    const planted = file(path, "// a console file", line, "export {};");
    expect(places(findConsoleDataPathViolations([planted]))).toEqual([marked(planted)]);
  });

  it("allows services, type-only imports, and the deps and services from the app directory", () => {
    const files = [
      file("apps/console/src/server/services/jobs.ts", 'import { sql } from "@tick/db";'),
      file("apps/console/src/server/api/deps.ts", 'import { getContext } from "../context";'),
      file("apps/console/src/app/jobs/row.tsx", 'import type { sql } from "@tick/db";'),
      file("apps/console/src/app/page.tsx", 'import { getServiceDeps } from "@/server/api/deps";', 'import { getTenantOverview } from "@/server/services/overview";'),
    ];
    expect(findConsoleDataPathViolations(files)).toEqual([]);
  });
});

describe("app-source-imports", () => {
  // The apps the tree has (the check knows an app by its folder, its package as @tick/<folder>).
  const apps = [
    file("apps/console/src/server/env.ts", "export const consoleEnvSchema = z.object({});"),
    file("apps/scheduler/src/env.ts", "export const schedulerEnvSchema = z.object({});"),
    file("apps/worker/src/env.ts", "export const workerEnvSchema = z.object({});"),
  ];

  it.each([
    ["a tool importing an app's env module", "tooling/deploy/src/apps.ts", 'import { workerEnvSchema } from "../../../apps/worker/src/env.js"; // violation'],
    ["an app importing another app's source", "apps/scheduler/src/leases/regions.ts", 'import { loadWorkerEnv } from "../../../worker/src/env.js"; // violation'],
    ["an app's tests importing another app's source", "apps/worker/test/harness.ts", 'import { schedulerEnvSchema } from "../../scheduler/src/env.js"; // violation'],
    ["a re-export of another app's source", "packages/testing/src/apps.ts", 'export { consoleEnvSchema } from "../../../apps/console/src/server/env.js"; // violation'],
    ["a dynamic import of another app's source", "e2e/start.test.ts", 'const { loadSchedulerEnv } = await import("../apps/scheduler/src/env.js"); // violation'],
    ["an app's source by package path", "tooling/deploy/src/apps.ts", 'import { consoleEnvSchema } from "@tick/console/src/server/env"; // violation'],
  ])("reports %s", (_, path, line) => {
    const planted = file(path, "// imports", line, "export {};");
    expect(places(findAppSourceImports([...apps, planted]))).toEqual([marked(planted)]);
  });

  it("allows an app's own source, what an app's package exports, another app's built entry point, and packages", () => {
    const files = [
      ...apps,
      file("apps/console/src/app/page.tsx", 'import { getEnv } from "../server/env";', 'import { getServiceDeps } from "@/server/api/deps";'),
      file("apps/worker/test/env.test.ts", 'import { workerEnvSchema } from "../src/env.js";'),
      file("tooling/deploy/src/apps.ts", 'import { workerEnvSchema } from "@tick/worker/env";', 'import { consoleEnvSchema } from "@tick/console/env";'),
      file("tooling/chaos/src/cluster.ts", 'const worker = path.join(root, "apps/worker/dist/main.js");', 'import { parseEnv } from "@tick/runtime";'),
      file("tooling/architecture/src/architecture.test.ts", 'import { JOB_STATES } from "../../../packages/core/src/job-state-machine.js";'),
    ];
    expect(findAppSourceImports(files)).toEqual([]);
  });
});

describe("sql-outside-db", () => {
  it.each([
    ["pool.query", 'const { rows } = await pool.query("SELECT now()"); // violation'],
    ["client.query<T>", "await client.query<{ id: string }>(`SELECT id FROM queues`); // violation"],
    ["$queryRaw", "const rows = await prisma.$queryRaw`SELECT now() AS now`; // violation"],
    ["$executeRawUnsafe", 'await tx.$executeRawUnsafe("DELETE FROM jobs"); // violation'],
  ])("reports %s in the console", (_, line) => {
    const planted = file("apps/console/src/server/services/things.ts", "export async function f() {", line, "}");
    expect(places(findSqlOutsideDb([planted]))).toEqual([marked(planted)]);
  });

  it("allows SQL in packages/db", () => {
    expect(findSqlOutsideDb([file("packages/db/src/sql/clock.ts", "export const now = (db) => db.query(`SELECT now()`);")])).toEqual([]);
  });
});

describe("duplicated-constants", () => {
  const jobStates = { states: JOB_STATES, terminal: TERMINAL_STATES, file: "packages/core/src/job-state-machine.ts" };
  const queues = file("packages/core/src/queues.ts", 'export const ATTEMPT_QUEUE = "attempts";', 'export const WEBHOOK_QUEUE = "webhooks";');

  it("reports a constant exported under the same name by two files, at both", () => {
    const a = file("apps/scheduler/src/scheduler.ts", 'import x from "y";', 'export const RETRY_LIMIT = "5"; // violation');
    const b = file("apps/worker/src/worker.ts", 'export const RETRY_LIMIT = "5"; // violation');
    expect(places(findDuplicatedConstants([queues, a, b], jobStates))).toEqual([marked(a), marked(b)]);
  });

  it("reports a queue name defined again under another name", () => {
    const planted = file("apps/worker/src/worker.ts", "", 'const ATTEMPTS = "attempts"; // violation');
    expect(places(findDuplicatedConstants([queues, planted], jobStates))).toEqual([marked(planted)]);
  });

  it("reports a BullMQ queue named by a literal, not a worker thread", () => {
    const planted = file(
      "apps/worker/src/worker.ts",
      'import { Queue } from "bullmq";',
      'import { Worker } from "node:worker_threads";',
      'const q = new Queue("attempts", { connection }); // violation',
      'const t = new Worker("./thread.js");',
    );
    expect(places(findDuplicatedConstants([planted], jobStates))).toEqual([marked(planted)]);
  });

  it.each([
    ["an array of every state", 'export const ORDER = ["scheduled", "dispatched", "running", "succeeded", "dead", "cancelled", "expired", "rate_limited"] as const; // violation'],
    ["a union type of every state", 'type Status = "expired" | "scheduled" | "dispatched" | "running" | "succeeded" | "dead" | "cancelled" | "rate_limited"; // violation'],
    ["the terminal states", 'const DONE = ["succeeded", "dead", "cancelled", "expired", "rate_limited"]; // violation'],
  ])("reports a copy of the job states: %s", (_, line) => {
    const planted = file("apps/console/src/server/services/overview.ts", 'import { sql } from "@tick/db";', line);
    expect(places(findDuplicatedConstants([planted], jobStates))).toEqual([marked(planted)]);
  });

  it("allows core's own list, a subset of the states, and Next.js segment config in every route", () => {
    const files = [
      file(jobStates.file, 'export const JOB_STATES = ["scheduled", "dispatched", "running", "succeeded", "dead", "cancelled", "expired", "rate_limited"] as const;'),
      file("apps/console/src/app/a/route.ts", 'export const dynamic = "force-dynamic";', 'const live = ["scheduled", "dispatched", "running"];'),
      file("apps/console/src/app/b/route.ts", 'export const dynamic = "force-dynamic";'),
      queues,
    ];
    expect(findDuplicatedConstants(files, jobStates)).toEqual([]);
  });
});

describe("api-routes", () => {
  const contract = file(
    CONTRACT_ROUTES,
    "export const routes = {",
    '  listThings: { method: "get", path: "/things", summary: "List" },',
    '  getThing: { method: "get", path: "/things/{id}", summary: "Get" }, // violation when unserved',
    "} as const;",
  );
  const list = file("apps/console/src/app/api/v1/things/route.ts", 'export const dynamic = "force-dynamic";', 'export const GET = apiRoute("listThings", async () => ({ status: 200, body: [] }));');
  const get = file("apps/console/src/app/api/v1/things/[id]/route.ts", 'export const GET = apiRoute("getThing", async () => ({ status: 200, body: {} }));');

  it("passes when every route has its handler", () => {
    expect(findRouteMismatches([contract, list, get])).toEqual([]);
  });

  it("reports a route without a handler, at the route", () => {
    expect(places(findRouteMismatches([contract, list]))).toEqual([marked(contract)]);
  });

  it.each([
    ["a handler of no route", "apps/console/src/app/api/v1/things/[id]/archive/route.ts", 'export const POST = apiRoute("archiveThing", handler); // violation'],
    ["a handler with the wrong method", "apps/console/src/app/api/v1/things/[id]/route.ts", 'export const PATCH = apiRoute("getThing", handler); // violation'],
    ["a handler at the wrong path", "apps/console/src/app/api/v1/thing/[id]/route.ts", 'export const GET = apiRoute("getThing", handler); // violation'],
    ["a handler that bypasses apiRoute", "apps/console/src/app/api/v1/things/[id]/route.ts", "export async function GET(request: Request) { // violation"],
  ])("reports %s, at the handler", (_, path, line) => {
    const planted = file(path, 'import { apiRoute } from "@/server/api/route";', line, "}");
    const findings = findRouteMismatches([contract, list, planted]);
    // (the route that lost its handler is reported too, in the contract)
    expect(places(findings).filter((p) => !p.startsWith(CONTRACT_ROUTES))).toEqual([marked(planted)]);
  });
});

describe("job-status-writes", () => {
  const registryFile = file(
    REGISTRY_FILE,
    "export const JOB_STATUS_WRITES = {",
    '  insertThings: { creates: "scheduled" },',
    '  cancelThing: { from: ["scheduled", "dispatched"], to: { cancel: "cancelled" } },',
    "} as const;",
  );
  const registry: StatusWriteRegistry = { insertThings: { creates: "scheduled" }, cancelThing: { from: ["scheduled", "dispatched"], to: { cancel: "cancelled" } } };
  const machine = { states: JOB_STATES, transitions: TRANSITIONS, initial: INITIAL_JOB_STATE };
  const insert = [
    "const insert = JOB_STATUS_WRITES.insertThings;",
    "export const insertThings = (db) => db.query(`INSERT INTO jobs (id, status, version) SELECT x.id, ${stateLiteral(insert.creates)}, 1 FROM x`);",
  ];
  const sqlFile = (...lines: string[]) => file("packages/db/src/sql/things.ts", 'import { JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";', ...insert, ...lines);
  const scan = (...files: SourceFile[]) => findUndeclaredStatusWrites([registryFile, ...files], registry, JOB_STATES);

  describe("the registry", () => {
    it("agrees with core's state machine", () => {
      expect(checkStatusWriteRegistry(JOB_STATUS_WRITES, machine, registryFile)).toEqual([]);
    });

    it.each([
      ["a transition the state machine refuses", '  cancelThing: { from: ["running"], to: { cancel: "cancelled" } }, // violation', { cancelThing: { from: ["running"], to: { cancel: "cancelled" } } }],
      ["an event that leads elsewhere", '  cancelThing: { from: ["dead"], to: { replay: "running" } }, // violation', { cancelThing: { from: ["dead"], to: { replay: "running" } } }],
      ["a creation in another state", '  insertThings: { creates: "running" }, // violation', { insertThings: { creates: "running" } }],
    ])("reports %s, at its entry", (_, line, planted) => {
      const plantedFile = file(REGISTRY_FILE, "export const JOB_STATUS_WRITES = {", line, "};");
      expect(places(checkStatusWriteRegistry(planted as StatusWriteRegistry, machine, plantedFile))).toEqual([marked(plantedFile)]);
    });
  });

  describe("the statements", () => {
    const cancel = [
      "const cancel = JOB_STATUS_WRITES.cancelThing;",
      "export const cancelThing = (db, id) => db.query(",
      "  `UPDATE jobs SET status = ${stateLiteral(cancel.to.cancel)}, version = version + 1",
      '    WHERE id = $1 AND ${statusIn("status", cancel.from)}`,',
      ");",
    ];

    it("pass when every write takes its states from the registry; reads, other tables and history copies are no writes", () => {
      const other = [
        "export const f = (db) => db.query(`UPDATE jobs SET cancel_requested_at = now() WHERE id = $1 AND status = 'running'`);",
        "export const g = (db) => db.query(`UPDATE attempts SET status = 'running' WHERE id = $1 AND status = 'pending'`);",
        "export const h = (db) => db.query(`WITH moved AS (DELETE FROM jobs WHERE status = 'dead' RETURNING *) INSERT INTO history.jobs SELECT * FROM moved`);",
      ];
      expect(scan(sqlFile(...cancel, ...other))).toEqual([]);
    });

    it("reports a registry entry no statement uses, at the entry", () => {
      const registryLine = file(REGISTRY_FILE, ...registryFile.text.split("\n").map((l) => (l.includes("cancelThing") ? `${l} // violation` : l)));
      expect(places(findUndeclaredStatusWrites([registryLine, sqlFile()], registry, JOB_STATES))).toEqual([marked(registryLine)]);
    });

    it.each([
      ["a literal new status", ["  `UPDATE jobs SET status = 'cancelled', version = version + 1 -- violation", '    WHERE id = $1 AND ${statusIn("status", cancel.from)}`,']],
      ["a literal status guard", ["  `UPDATE jobs SET status = ${stateLiteral(cancel.to.cancel)}, version = version + 1", "    WHERE id = $1 AND status IN ('scheduled', 'dispatched') -- violation`,"]],
      ["a literal branch of a CASE", ["  `UPDATE jobs SET status = CASE WHEN $2 THEN 'cancelled'::job_status ELSE $3::job_status END, -- violation", '    version = version + 1 WHERE id = $1 AND ${statusIn("status", cancel.from)}`,']],
      ["a parameter compared with a literal state", ["  `UPDATE jobs SET status = $3::job_status, due_at = CASE WHEN $3 = 'scheduled' THEN now() END -- violation", '    WHERE id = $1 AND ${statusIn("status", cancel.from)}`,']],
      ["a state named in code", ['  `UPDATE jobs SET status = ${stateLiteral("cancelled")}, version = version + 1 -- violation', '    WHERE id = $1 AND ${statusIn("status", cancel.from)}`,']],
      [
        "a literal guard in the CTE that locks the rows",
        ["  `WITH due AS (SELECT id FROM jobs WHERE status = 'scheduled' FOR UPDATE SKIP LOCKED) -- violation", "   UPDATE jobs j SET status = ${stateLiteral(cancel.to.cancel)} FROM due WHERE j.id = due.id`,"],
      ],
    ])("reports %s", (_, statement) => {
      const planted = sqlFile(cancel[0]!, cancel[1]!, ...statement, ");");
      expect([...new Set(places(scan(planted)))]).toEqual([marked(planted)]);
    });

    it("reports a write that declares nothing, and a literal state in an insert", () => {
      const planted = sqlFile("export const f = (db) => db.query(`UPDATE jobs SET status = 'dead' WHERE id = $1`); // violation", ...cancel);
      const insertLiteral = file("packages/db/src/sql/more.ts", "export const g = (db) => db.query(`INSERT INTO jobs (id, status) VALUES ($1, 'scheduled')`); // violation");
      const findings = scan(planted, insertLiteral);
      expect([...new Set(places(findings))]).toEqual([marked(planted), marked(insertLiteral)]);
      expect(findings.map((f) => f.message).join("\n")).toMatch(/without declaring the transition[\s\S]*as a literal/);
    });

    it("reports a status written through Prisma", () => {
      const planted = file("apps/console/src/server/services/things.ts", "export const f = (prisma, id) =>", '  prisma.job.update({ where: { id }, data: { status: "dead" } }); // violation');
      expect(places(scan(sqlFile(...cancel), planted))).toEqual([marked(planted)]);
    });
  });
});

describe("the allowlist", () => {
  it("matches globs by folder", () => {
    expect(matchesGlob("apps/worker/test/harness.ts", "apps/*/test/**")).toBe(true);
    expect(matchesGlob("apps/worker/src/test/x.ts", "apps/*/test/**")).toBe(false);
    expect(matchesGlob("packages/core/src/a.test.ts", "**/*.test.ts")).toBe(true);
    expect(matchesGlob("a.test.ts", "**/*.test.ts")).toBe(true);
    expect(matchesGlob("packages/core/src/a.test.tsx", "**/*.test.ts")).toBe(false);
  });

  it("excuses only the check, files and line an entry names, and reports entries that excuse nothing", () => {
    const f = file("packages/runtime/src/stores.ts", 'const a = await pool.query("SELECT 1");', 'const b = await pool.query("SELECT * FROM jobs");');
    const findings = findSqlOutsideDb([f]);
    const entry = { check: "sql-outside-db", files: ["packages/runtime/**"], line: "SELECT 1", reason: "probe" };
    const stale = { check: "env-reads", files: ["packages/runtime/**"], reason: "nothing" };
    const { open, unused } = applyAllowlist(findings, [f], [entry, stale]);
    expect(places(open)).toEqual(["packages/runtime/src/stores.ts:2"]);
    expect(unused).toEqual([stale]);
  });
});
