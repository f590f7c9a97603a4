import { API_ROUTES } from "./find-route-mismatches.js";
import { DUPLICATED_CONSTANTS } from "./find-duplicated-constants.js";
import { ENV_READS } from "./find-env-reads.js";
import { JOB_STATUS_WRITES_CHECK } from "./find-job-status-writes.js";
import { SQL_OUTSIDE_DB } from "./find-sql-outside-db.js";
import type { Finding, SourceFile } from "./source-tree.js";

/**
 * A finding the architecture test accepts, and why. Every check scans every source file; nothing is
 * skipped without an entry here. An entry that no longer excuses anything fails the test (remove it).
 */
export interface AllowlistEntry {
  check: string;
  /** Repository paths: `*` matches within a folder name, `**` across folders. */
  files: readonly string[];
  /** Only findings whose source line contains this text (to excuse one statement, not a whole file). */
  line?: string;
  reason: string;
  /** For an entry that waits for a change elsewhere: what removes it. */
  temporary?: string;
}

// Test code: unit and integration tests, their harnesses and helpers, and the end-to-end suite.
const TESTS = ["**/*.test.ts", "**/*.test.tsx", "apps/*/test/**", "e2e/**", "packages/testing/**", "packages/db/src/testing.ts"];
// Tools that are not the product: the fault-injection suite and the benchmark.
const TOOLS = ["tooling/chaos/**", "tooling/bench/**"];
// npm start / npm test: the launcher that finds or starts Postgres and Redis and builds each app's environment.
const SCRIPTS = ["scripts/**"];

const ALLOWLIST: readonly AllowlistEntry[] = [
  { check: ENV_READS, files: TESTS, reason: "tests find their services (DATABASE_URL, REDIS_URL as npm test passes them) and set the environment of the processes they start" },
  { check: ENV_READS, files: TOOLS, reason: "the chaos and bench entry points are their own composition roots and configure the product processes they start" },
  { check: ENV_READS, files: SCRIPTS, reason: "the launcher builds the environment the apps are started with" },
  { check: ENV_READS, files: ["packages/db/prisma.config.ts", "packages/db/scripts/**"], reason: "the Prisma CLI's config and its schema-engine shim run inside the CLI, which is configured by the environment" },
  { check: ENV_READS, files: ["packages/db/src/migrate.ts"], line: "...process.env", reason: "passes the environment through to the Prisma CLI child process (PATH, HOME) and reads no setting of its own" },

  { check: SQL_OUTSIDE_DB, files: TESTS, reason: "tests arrange rows and assert outcomes in the database directly" },
  { check: SQL_OUTSIDE_DB, files: TOOLS, reason: "the chaos invariant checker and the benchmark read the database to verify and measure what the product did" },
  { check: SQL_OUTSIDE_DB, files: SCRIPTS, reason: "the launcher creates and drops databases" },
  {
    check: SQL_OUTSIDE_DB,
    files: ["packages/runtime/src/stores.ts"],
    line: `pool.query("SELECT 1")`,
    reason: "the readiness probe: a round trip on the pool the app passes in; it reads no data",
  },

  { check: JOB_STATUS_WRITES_CHECK, files: TESTS, reason: "tests put jobs into a state directly to arrange a case (a dead job for the DLQ, a running one for the reaper)" },
  { check: JOB_STATUS_WRITES_CHECK, files: TOOLS, reason: "the benchmark seeds its own jobs in bulk; it is not the product" },

  { check: API_ROUTES, files: ["apps/console/src/app/api/v1/openapi.json/route.ts"], line: "export function GET", reason: "serves the OpenAPI document generated from the contract; it is not an operation of the contract" },

  { check: DUPLICATED_CONSTANTS, files: ["tooling/chaos/src/cluster.ts"], line: "export const SHARDS", reason: "the chaos cluster's own shard count (8), not the product's: the scheduler tests pick theirs (4)" },
  { check: DUPLICATED_CONSTANTS, files: TESTS, reason: "tests spell out expected values (a list of states a job may be in) instead of importing what they check" },
];

/** Findings no allowlist entry excuses, and the entries that excused nothing. */
export function applyAllowlist(findings: readonly Finding[], files: readonly SourceFile[], allowlist: readonly AllowlistEntry[] = ALLOWLIST) {
  const text = new Map(files.map((f) => [f.path, f.text.split("\n")]));
  const used = new Set<AllowlistEntry>();
  const open = findings.filter((finding) => {
    const entry = allowlist.find(
      (e) =>
        e.check === finding.check &&
        e.files.some((glob) => matchesGlob(finding.file, glob)) &&
        (e.line === undefined || (text.get(finding.file)?.[finding.line - 1] ?? "").includes(e.line)),
    );
    if (entry) used.add(entry);
    return !entry;
  });
  return { open, unused: allowlist.filter((e) => !used.has(e)) };
}

/** `*` within a path segment, `**` across segments (a trailing `/**` also matches the folder's files at any depth). */
export function matchesGlob(file: string, glob: string): boolean {
  const pattern = glob
    .split(/(\*\*\/|\/\*\*|\*)/)
    .map((part) => (part === "**/" ? "(?:.*/)?" : part === "/**" ? "/.*" : part === "*" ? "[^/]*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${pattern}$`).test(file);
}

export const formatFinding = (f: Finding) => `${f.file}:${f.line}: [${f.check}] ${f.message}`;
