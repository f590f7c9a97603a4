import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { seededRandom } from "../random.js";
import type { TryOutcome } from "./create-load.js";
import { findHaBinaries, stopAllStacks } from "./ha-stack.js";
import { runPostgresFailover, type FailoverRun } from "./postgres-failover.js";

// node packages/chaos/dist/failover/main.js [--seed N] [--json file]
// The failover tests with a real HA stack (docs/failover.md): S3, the Postgres primary's loss under
// Patroni, with synchronous then asynchronous replication. Prints RPO and RTO; exits 1 on a broken invariant.

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const started = Date.now();
const log = (line: string) => process.stdout.write(`[failover ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}\n`);

function table(runs: FailoverRun[]): string {
  const head = ["run", "primary before → after", "RTO (ms)", "503 unavailable", "503 outcome unknown", "connection errors", "hangs", "acknowledged", "RPO (acknowledged, lost)", "duplicate effects", "raw duplicate deliveries"];
  const n = (r: FailoverRun, k: TryOutcome) => String(r.during[k]);
  const lines = runs.map((r) => [
    r.name,
    `${r.killed} → ${r.primaryAfter ?? "none"}`,
    String(r.rtoMs ?? "never"),
    n(r, "database_unavailable"),
    n(r, "outcome_unknown"),
    n(r, "connection_error"),
    n(r, "timeout"),
    String(r.acknowledged),
    String(r.rpoJobs),
    String(r.duplicateEffects),
    String(r.rawDuplicateDeliveries),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [fmt(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...lines.map(fmt)].join("\n");
}

async function main() {
  const seed = Number(arg("seed") ?? 1);
  const json = arg("json");
  const bins = findHaBinaries(); // a missing package is a failure that names it, never a skip
  log(`seed ${seed}; patroni ${bins.patroni}, etcd ${bins.etcd}, haproxy ${bins.haproxy}, PostgreSQL ${bins.pgBinDir}`);
  const logDir = path.join(process.cwd(), ".data", "failover", `seed-${seed}-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  log(`process logs: ${logDir}`);
  const s3 = await runPostgresFailover({ log, logDir, random: seededRandom(seed) });
  process.stdout.write(`\nS3, Postgres primary lost (Patroni ttl ${s3.timings.ttl} s, loop_wait ${s3.timings.loopWait} s; HAProxy check every ${s3.timings.checkInterval}):\n${table(s3.runs)}\n\n`);
  for (const r of s3.runs) {
    log(
      `${r.name}: RPO ${r.rpoJobs} acknowledged job(s) lost${r.rpoKeys.length ? ` (${r.rpoKeys.slice(0, 10).join(", ")})` : ""}; RTO ${r.rtoMs ?? "never"} ms; ` +
        `standby flush lag under load: at most ${r.standbyFlushLagBytes.max ?? "?"} bytes, ${r.standbyFlushLagBytes.atKill ?? "?"} at the kill; ` +
        `slowest refusal ${r.slowestRefusalMs ?? "-"} ms; ${r.acknowledgedAfterRetry} creates refused during the gap were acknowledged on a retry with their key; ` +
        `max start lag ${r.maxStartLagMs ?? "-"} ms (bound ${r.startLagBoundMs ?? "-"})${r.oldPrimaryRejoinedAsStandby === null ? "" : `; old primary back as a standby: ${r.oldPrimaryRejoinedAsStandby}`}`,
    );
  }
  log(`every create try: ${JSON.stringify(s3.outcomes)}`);
  log(`facts: ${JSON.stringify(s3.facts)}`);
  const report = { seed, durationMs: Date.now() - started, machine: { cpus: os.cpus().length, node: process.version }, s3 };
  process.stdout.write(`${JSON.stringify({ scenario: "S3", runs: s3.runs.map(({ rpoKeys: _k, ...r }) => r), violations: s3.violations.length })}\n`);
  if (json) {
    fs.mkdirSync(path.dirname(json), { recursive: true });
    fs.writeFileSync(json, JSON.stringify(report, null, 2));
  }
  if (s3.violations.length) {
    log(`FAILED: ${s3.violations.length} violations:`);
    for (const v of s3.violations.slice(0, 50)) log(`  ${v}`);
    return 1;
  }
  log("passed");
  return 0;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the HA stack`);
    void stopAllStacks().finally(() => process.exit(130));
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`failover test failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
