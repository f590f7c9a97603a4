// The finish-path check, over planted files: a statement that can end jobs is reported at its line unless it
// is in packages/db/src/sql/finish.ts and composed by endingStatement there.
import { describe, expect, it } from "vitest";
import { TERMINAL_STATES } from "../../../packages/core/src/job-state-machine.js";
import { findTerminalWritesOutsideFinishPath, FINISH_PATH_FILE, type StatusWriteRegistry } from "./find-job-status-writes.js";
import type { Finding, SourceFile } from "./source-tree.js";

const file = (path: string, ...lines: string[]): SourceFile => ({ path, text: lines.join("\n") });
/** Where a planted file says its violation is. */
const marked = (f: SourceFile) => `${f.path}:${f.text.split("\n").findIndex((l) => l.includes("violation")) + 1}`;
const places = (findings: Finding[]) => findings.map((f) => `${f.file}:${f.line}`);

const registry: StatusWriteRegistry = {
  claimThings: { from: ["scheduled"], to: { dispatch: "dispatched" } },
  cancelThing: { from: ["scheduled", "dispatched"], to: { cancel: "cancelled" } },
  endAttempt: { from: ["running"], to: { succeed: "succeeded", retry: "scheduled" } },
};
const scan = (...files: SourceFile[]) => findTerminalWritesOutsideFinishPath(files, registry, TERMINAL_STATES);
const imports = 'import { JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";';
const cancel = [
  "const cancel = JOB_STATUS_WRITES.cancelThing;",
  "export const cancelThing = (db, id) => db.query(",
  "  `UPDATE jobs SET status = ${stateLiteral(cancel.to.cancel)}, version = version + 1 -- violation",
  '    WHERE id = $1 AND ${statusIn("status", cancel.from)}`,',
  ");",
];

describe("finish-path", () => {
  it("reports a statement that ends jobs outside finish.ts, at its write", () => {
    const planted = file("packages/db/src/sql/jobs.ts", imports, ...cancel);
    expect(places(scan(planted))).toEqual([marked(planted)]);
    expect(scan(planted)[0]!.message).toMatch(/cancelThing ends jobs \(cancelled\) outside the finish path/);
  });

  it("reports one whose decision may end the job (a completion that may succeed or retry) outside finish.ts", () => {
    const planted = file(
      "apps/worker/src/complete.ts",
      "const end = JOB_STATUS_WRITES.endAttempt;",
      "export const complete = (db, a) => db.query(`UPDATE jobs SET status = $2::job_status -- violation",
      '  WHERE id = $1 AND ${statusIn("status", end.from)} AND $2 IN (${stateLiteral(end.to.succeed)}, ${stateLiteral(end.to.retry)})`, [a.id, a.target]);',
    );
    expect(places(scan(planted))).toEqual([marked(planted)]);
  });

  it("reports one in finish.ts that does not go through endingStatement", () => {
    const planted = file(FINISH_PATH_FILE, imports, ...cancel);
    expect(places(scan(planted))).toEqual([marked(planted)]);
    expect(scan(planted)[0]!.message).toMatch(/without endingStatement/);
  });

  it("passes one in finish.ts composed by endingStatement, directly or through a constant", () => {
    const direct = [
      "const cancel = JOB_STATUS_WRITES.cancelThing;",
      "export const cancelThing = (db, id) => db.query(endingStatement(",
      '  `ended AS (UPDATE jobs SET status = ${stateLiteral(cancel.to.cancel)} WHERE id = $1 AND ${statusIn("status", cancel.from)} RETURNING *)`,',
      "  `SELECT * FROM ended`,",
      "));",
    ];
    const viaConstant = [
      "const end = JOB_STATUS_WRITES.endAttempt;",
      'const END = endingStatement(`ended AS (UPDATE jobs j SET status = $2::job_status WHERE ${statusIn("j.status", end.from)} RETURNING j.*)`, `SELECT 1`);',
      "export const complete = (db) => db.query({ name: 'end', text: END });",
    ];
    expect(scan(file(FINISH_PATH_FILE, imports, ...direct, ...viaConstant))).toEqual([]);
  });

  it("passes writes that end no job, anywhere: a dispatch, a cancel request on a running job, other tables", () => {
    const planted = file(
      "packages/db/src/sql/dispatch.ts",
      imports,
      "const claim = JOB_STATUS_WRITES.claimThings;",
      'export const claim = (db) => db.query(`UPDATE jobs SET status = ${stateLiteral(claim.to.dispatch)} WHERE ${statusIn("status", claim.from)}`);',
      "export const ask = (db) => db.query(`UPDATE jobs SET cancel_requested_at = now() WHERE id = $1`);",
      "export const attempt = (db) => db.query(`UPDATE attempts SET status = 'succeeded' WHERE id = $1`);",
    );
    expect(scan(planted)).toEqual([]);
  });
});
