import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { seededRandom } from "../random.js";
import type { TryOutcome } from "./create-load.js";
import { findHaBinaries, stopAllStacks } from "./ha-stack.js";
import { runPostgresFailover, type FailoverRun } from "./postgres-failover.js";
import { runRedisFailover, type RedisFailoverReport } from "./redis-failover.js";
import { runRegionFailover, type RegionFailoverReport } from "./region-failover.js";
import { runRestoreDrill, type RestoreDrillReport } from "./restore-drill.js";
import { markdownTable } from "@tick/testing";

// node tooling/chaos/dist/failover/main.js [--seed N] [--json file] [--scenario s3|s18|redis|restore|all] [--no-sentinel] [--no-fence]
// The failover tests with a real HA stack (docs/failover.md): S3, the Postgres primary's loss under
// Patroni, with synchronous then asynchronous replication; S18, a whole region lost and back; redis, the
// Redis primary's loss under Sentinel (--no-sentinel: the same run with the apps not given the sentinels,
// which must fail); restore, the backup and restore drill with pgBackRest (--no-fence: the same drill without
// the restore fence, which must fail). Prints RPO and RTO; exits 1 on a broken invariant.

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
  return markdownTable(head, lines);
}

function printRegion(r: RegionFailoverReport) {
  process.stdout.write(
    `\nS18, region a lost and back (Patroni ttl ${r.timings.ttl} s; shard leases 3 s):\n` +
      `| RTO (ms) | shard takeover (ms) | 503 during the gap | hangs | acknowledged | RPO | duplicate effects | raw duplicate deliveries | stale writes refused (after a's return) | hand-back (ms) |\n` +
      `|---|---|---|---|---|---|---|---|---|---|\n` +
      `| ${r.rtoMs ?? "never"} | ${r.shardTakeoverMs ?? "never"} | ${r.during.database_unavailable + r.during.outcome_unknown} | ${r.during.timeout} | ${r.acknowledged} | ${r.rpoJobs} | ${r.duplicateEffects} | ${r.rawDuplicateDeliveries} | ${r.staleWritesRefused.total} (${r.staleWritesRefused.afterReturn}) | ${r.handBackMs ?? "never"} |\n\n`,
  );
  log(`S18: shard epochs (before → takeover by b → handed back to a): ${r.epochs.map((e) => `${e.shard}: ${e.before} → ${e.takeover ?? "-"} → ${e.handedBack ?? "-"}`).join(", ")}`);
  log(
    `S18: ${r.overdueReleased.jobs} jobs of region a's shards fell due during the loss; the first was dispatched ${r.overdueReleased.firstAfterLossMs ?? "-"} ms after the loss, the last ${r.overdueReleased.spreadMs ?? "-"} ms after the first; ` +
      `max start lag ${r.maxStartLagMs ?? "-"} ms (bound ${r.startLagBoundMs ?? "-"}); old primary back as a standby: ${r.oldPrimaryRejoinedAsStandby}`,
  );
  log(`S18: catch-up: ${r.catchUp.jobs} jobs due while region a was down released in ${r.catchUp.releaseMs ?? "-"} ms (${r.catchUp.perSecond ?? "-"}/s; SCHEDULER_DISPATCH_RATE ${r.catchUp.dispatchRate}/s)`);
  log(`S18: every create try: ${JSON.stringify(r.outcomes)}`);
  log(`S18: facts: ${JSON.stringify(r.facts)}`);
  process.stdout.write(`${JSON.stringify({ scenario: "S18", rtoMs: r.rtoMs, shardTakeoverMs: r.shardTakeoverMs, rpoJobs: r.rpoJobs, acknowledged: r.acknowledged, duplicateEffects: r.duplicateEffects, handBackMs: r.handBackMs, staleWritesRefused: r.staleWritesRefused, violations: r.violations.length })}\n`);
}

function printRedis(r: RedisFailoverReport) {
  const ms = (v: number | null) => (v === null ? "never" : String(v));
  process.stdout.write(
    `\nRedis primary lost (Sentinel: ${r.sentinel ? "3 sentinels, quorum 2" : "NOT given to the apps"}; down-after ${r.timings.downAfterMs} ms, failover-timeout ${r.timings.failoverTimeoutMs} ms):\n` +
      markdownTable(
        ["killed → promoted", "promotion (ms)", "RTO: jobs run again (ms)", "creates acknowledged", "lost", "duplicate effects", "raw duplicate deliveries", "max start lag (ms)", "old primary a replica again (ms)", "app connections on the old primary", "jobs run after its return"],
        [[`${r.killed} → ${r.promoted ?? "none"}`, ms(r.promotionMs), ms(r.rtoMs), r.acknowledged, r.lost, r.duplicateEffects, r.rawDuplicateDeliveries, ms(r.maxStartLagMs), ms(r.oldPrimaryRejoinMs), r.appConnectionsOnOldPrimary, r.ranAfterRejoin]],
      ) +
      "\n\n",
  );
  log(`redis: creates around the kill (Redis is not on their path): first acknowledged ${ms(r.creates.rtoMs)} ms after it; answers in between ${JSON.stringify(r.creates.during)}`);
  log(`redis: facts: ${JSON.stringify(r.facts)}`);
  process.stdout.write(`${JSON.stringify({ scenario: "redis", sentinel: r.sentinel, promotionMs: r.promotionMs, rtoMs: r.rtoMs, lost: r.lost, duplicateEffects: r.duplicateEffects, oldPrimaryRejoinMs: r.oldPrimaryRejoinMs, violations: r.violations.length })}\n`);
}

function printRestore(r: RestoreDrillReport) {
  const ms = (v: number | null) => (v === null ? "never" : String(v));
  process.stdout.write(
    `\nRestore from backup to a restore point T (pgBackRest; restore fence: ${r.fence ? "run" : "NOT run"}):\n` +
      markdownTable(
        ["acknowledged before T / around / after", "missing of those before T", "lost: acknowledged after T (already run)", "backup (ms)", "archive lag (ms)", "restore (ms)", "fence (ms)", "RTO: stop to first job (ms)", "jobs restored", "ran again", "effects", "duplicate effects", "raw re-deliveries", "fencing tokens checked / reused / backwards", "epoch before → after"],
        [
          [
            `${r.acknowledged.beforeT} / ${r.acknowledged.aroundT} / ${r.acknowledged.afterT}`,
            r.missingBeforeT,
            `${r.lostAfterT} (${r.lostAfterTAlreadyRun})`,
            r.backupMs,
            ms(r.archive.switchToArchivedMs),
            r.restoreMs,
            ms(r.fenceMs),
            ms(r.rtoMs),
            r.jobsRestored,
            r.ranAgain,
            r.effects,
            r.duplicateEffects,
            r.rawRedeliveries,
            `${r.fencing.checked} / ${r.fencing.reused} / ${r.fencing.backwards}`,
            `${r.epochs.highestBefore} → ${r.epochs.lowestAfter ?? "-"}`,
          ],
        ],
      ) +
      "\n\n",
  );
  log(`restore: WAL at T: ${r.archive.walInOpenSegmentAtT} bytes in the open segment, ${r.archive.segmentsWaitingAtT} segments waiting for the archiver; ${r.archive.walBytesPerSecond} bytes/s of WAL under the load`);
  process.stdout.write(`${JSON.stringify({ scenario: "restore", fence: r.fence, rtoMs: r.rtoMs, restoreMs: r.restoreMs, lostAfterT: r.lostAfterT, missingBeforeT: r.missingBeforeT, fencing: r.fencing, duplicateEffects: r.duplicateEffects, violations: r.violations.length })}\n`);
}

async function main() {
  const seed = Number(arg("seed") ?? 1);
  const json = arg("json");
  const scenario = arg("scenario") ?? "all";
  if (!["s3", "s18", "redis", "restore", "all"].includes(scenario)) throw new Error(`--scenario: s3, s18, redis, restore or all (got ${scenario})`);
  const bins = findHaBinaries(); // a missing package is a failure that names it, never a skip
  log(`seed ${seed}; patroni ${bins.patroni}, etcd ${bins.etcd}, haproxy ${bins.haproxy}, PostgreSQL ${bins.pgBinDir}`);
  const logDir = path.join(process.cwd(), ".data", "failover", `seed-${seed}-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  log(`process logs: ${logDir}`);
  const violations: string[] = [];
  const report: Record<string, unknown> = { seed, machine: { cpus: os.cpus().length, node: process.version } };
  if (scenario === "s3" || scenario === "all") {
    const s3 = await runPostgresFailover({ log, logDir, random: seededRandom(seed) });
    process.stdout.write(`\nS3, Postgres primary lost (Patroni ttl ${s3.timings.ttl} s, loop_wait ${s3.timings.loopWait} s; HAProxy check every ${s3.timings.checkInterval}):\n${table(s3.runs)}\n\n`);
    for (const r of s3.runs) {
      log(
        `${r.name}: RPO ${r.rpoJobs} acknowledged job(s) lost${r.rpoKeys.length ? ` (${r.rpoKeys.slice(0, 10).join(", ")}; ${r.lostJobsAlreadyRun} of them had already run at the sink)` : ""}; RTO ${r.rtoMs ?? "never"} ms; ` +
        (r.rerunAfterLostAttempt ? `${r.rerunAfterLostAttempt} jobs ran again after their attempt's row was lost (same key, effect once); ` : "") +
          `standby flush lag under load: at most ${r.standbyFlushLagBytes.max ?? "?"} bytes, ${r.standbyFlushLagBytes.atKill ?? "?"} at the kill; ` +
          (r.streamStalledMs === null ? "" : `${r.acknowledgedWhileStalled} creates acknowledged while the stream was stalled; `) +
          `slowest refusal ${r.slowestRefusalMs ?? "-"} ms; ${r.acknowledgedAfterRetry} creates refused during the gap were acknowledged on a retry with their key; ` +
          `max start lag ${r.maxStartLagMs ?? "-"} ms (bound ${r.startLagBoundMs ?? "-"})${r.oldPrimaryRejoinedAsStandby === null ? "" : `; old primary back as a standby: ${r.oldPrimaryRejoinedAsStandby}`}`,
      );
    }
    log(`every create try: ${JSON.stringify(s3.outcomes)}`);
    log(`facts: ${JSON.stringify(s3.facts)}`);
    process.stdout.write(`${JSON.stringify({ scenario: "S3", runs: s3.runs.map(({ rpoKeys: _k, ...r }) => r), violations: s3.violations.length })}\n`);
    report.s3 = s3;
    violations.push(...s3.violations.map((v) => `S3: ${v}`));
  }
  if (scenario === "s18" || scenario === "all") {
    const s18 = await runRegionFailover({ log, logDir, random: seededRandom(seed + 1) });
    printRegion(s18);
    report.s18 = s18;
    violations.push(...s18.violations.map((v) => `S18: ${v}`));
  }
  if (scenario === "redis" || scenario === "all") {
    const redis = await runRedisFailover({ log, logDir, random: seededRandom(seed + 2), sentinel: !process.argv.includes("--no-sentinel") });
    printRedis(redis);
    report.redis = redis;
    violations.push(...redis.violations.map((v) => `Redis: ${v}`));
  }
  if (scenario === "restore" || scenario === "all") {
    const drill = await runRestoreDrill({ log, logDir, random: seededRandom(seed + 3), fence: !process.argv.includes("--no-fence") });
    printRestore(drill);
    report.restore = drill;
    violations.push(...drill.violations.map((v) => `restore: ${v}`));
  }
  report.durationMs = Date.now() - started;
  if (json) {
    fs.mkdirSync(path.dirname(json), { recursive: true });
    fs.writeFileSync(json, JSON.stringify(report, null, 2));
  }
  if (violations.length) {
    log(`FAILED: ${violations.length} violations:`);
    for (const v of violations.slice(0, 50)) log(`  ${v}`);
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
