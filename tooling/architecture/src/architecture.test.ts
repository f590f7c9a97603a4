// The architecture test: reads the repository's source tree and fails, naming file and line, where one
// of the boundaries in docs/architecture.md (section 7) is crossed. Fast and without services (it only parses).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
// Read from source, not from a build: the test checks the tree as it is.
import { INITIAL_JOB_STATE, JOB_STATES, TERMINAL_STATES, TRANSITIONS } from "../../../packages/core/src/job-state-machine.js";
import { JOB_STATUS_WRITES } from "../../../packages/db/src/sql/job-status-writes.js";
import { applyAllowlist, formatFinding } from "./allowlist.js";
import { checkArchitecture } from "./check-architecture.js";
import { readSourceTree } from "./source-tree.js";

const root = path.resolve(fileURLToPath(import.meta.url), "../../../..");
const files = readSourceTree(root);
const findings = checkArchitecture(files, {
  jobStates: { states: JOB_STATES, terminal: TERMINAL_STATES, file: "packages/core/src/job-state-machine.ts" },
  machine: { states: JOB_STATES, transitions: TRANSITIONS, initial: INITIAL_JOB_STATE },
  registry: JOB_STATUS_WRITES,
});
const { open, unused } = applyAllowlist(findings, files);

describe("architecture", () => {
  it("reads the source tree", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.some((f) => f.path === "packages/db/src/sql/job-status-writes.ts")).toBe(true);
  });

  it.each([
    ["env-reads", "process.env is read only in an app's env module or composition root"],
    ["sql-outside-db", "SQL runs only in packages/db"],
    ["duplicated-constants", "queue names and other shared constants are defined once, job states only in core"],
    ["api-routes", "every contract route has its handler, every handler its route"],
    ["console-data-path", "the console's pages, actions and route handlers reach the database only through its services"],
    ["app-source-imports", "nothing imports another app's source: an app's package exports what others need (its env schema)"],
    ["job-status-writes", "every status write in SQL is a declared transition the state machine allows, and every end of a job goes through the finish path"],
  ])("%s: %s", (check) => {
    const violations = open.filter((f) => f.check === check).map(formatFinding);
    expect(violations, `\n${violations.join("\n")}\n`).toEqual([]);
  });

  it("every allowlist entry still excuses something", () => {
    expect(unused.map((e) => `${e.check} ${e.files.join(", ")}${e.line ? ` (${e.line})` : ""}: nothing to excuse; remove the entry`)).toEqual([]);
  });
});
