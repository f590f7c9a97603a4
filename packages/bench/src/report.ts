import type { BurnDownResult, CatchUpResult, FairnessResult, HistoryResult, PrecisionResult, ScaleResult } from "./scenarios.js";

export interface Target {
  target: string;
  met: boolean;
  measured: string;
}

export interface BenchReport {
  machine: Record<string, unknown>;
  quick: boolean;
  startedAt: string;
  scenarios: {
    burnDown?: BurnDownResult[];
    precision?: PrecisionResult[];
    fairness?: FairnessResult;
    catchUp?: CatchUpResult;
    scale?: ScaleResult[];
    history?: HistoryResult[];
  };
  targets?: Target[];
}

const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 100) / 100 : 0);

/** The targets of issue #9, each judged on this run's figures only. */
export function judge(report: BenchReport): Target[] {
  const targets: Target[] = [];
  const { burnDown, precision, fairness, catchUp, scale, history } = report.scenarios;
  if (burnDown) {
    const rate = (s: string) => burnDown.find((r) => r.system === s)?.jobsPerSecond ?? 0;
    const tick = rate("tick");
    for (const peer of ["graphile-worker", "pg-boss"]) {
      targets.push({ target: `throughput at least ${peer}'s`, met: tick >= rate(peer), measured: `${tick} vs ${rate(peer)} jobs/s (×${ratio(tick, rate(peer))})` });
    }
    targets.push({ target: "throughput at least half of plain BullMQ's", met: tick >= rate("bullmq") / 2, measured: `${tick} vs ${rate("bullmq")} jobs/s (×${ratio(tick, rate("bullmq"))})` });
    const commits = burnDown.find((r) => r.system === "tick")?.cost.commitsPerJob ?? 0;
    targets.push({ target: "at most 3 Postgres commits per job", met: commits <= 3, measured: `${commits} commits per job` });
  }
  const at500 = precision?.find((p) => p.ratePerSecond === 500);
  if (at500) targets.push({ target: "p99 (start − due) under 100 ms at 500 jobs/s", met: at500.p99Ms < 100, measured: `p99 ${at500.p99Ms} ms` });
  if (precision) {
    const early = precision.reduce((a, p) => a + p.early, 0);
    targets.push({ target: "no job starts before its due time", met: early === 0, measured: `${early} early starts` });
  }
  if (fairness) {
    targets.push({ target: "quiet tenant's p99 under the burst within 1.5× its solo p99", met: fairness.quietRatio <= 1.5, measured: `${fairness.quietUnderBurstP99Ms} vs ${fairness.quietSoloP99Ms} ms (×${fairness.quietRatio})` });
    targets.push({ target: "shares within 5 points of the weights", met: fairness.shareErrorPct <= 5, measured: `${fairness.shares.join(" / ")} for ${fairness.expectedShares.join(" / ")}` });
  }
  if (catchUp) targets.push({ target: "catch-up release never above the cap", met: catchUp.secondsAboveCap === 0, measured: `max ${catchUp.maxPerSecond}/s, cap ${catchUp.capPerSecond}/s` });
  if (scale && scale.length >= 2) {
    const small = scale[0]!;
    const large = scale[scale.length - 1]!;
    targets.push({
      target: `claim latency at ${large.futureJobs.toLocaleString("en")} scheduled jobs within 1.5× of that at ${small.futureJobs.toLocaleString("en")}`,
      met: large.claimP50Ms <= small.claimP50Ms * 1.5,
      measured: `p50 ${large.claimP50Ms} vs ${small.claimP50Ms} ms (×${ratio(large.claimP50Ms, small.claimP50Ms)}), p99 ${large.claimP99Ms} vs ${small.claimP99Ms} ms`,
    });
  }
  if (history && history.length >= 2) {
    const empty = history[0]!;
    const full = history[history.length - 1]!;
    targets.push({
      target: `(#10) claim plan and latency with ${full.historyJobs.toLocaleString("en")} history jobs unchanged against ${empty.historyJobs.toLocaleString("en")}`,
      met: full.plan === empty.plan && full.claimP50Ms <= empty.claimP50Ms * 1.5,
      measured: `plan ${full.plan === empty.plan ? "identical" : "DIFFERENT"}; p50 ${full.claimP50Ms} vs ${empty.claimP50Ms} ms (×${ratio(full.claimP50Ms, empty.claimP50Ms)}), p99 ${full.claimP99Ms} vs ${empty.claimP99Ms} ms`,
    });
    targets.push({
      target: "(#10) dispatch keeps its rate while retention deletes expired history",
      met: full.historyDeletedDuringBurnDown > 0 && full.burnDownJobsPerSecond >= empty.burnDownJobsPerSecond * 0.8,
      measured: `${full.burnDownJobsPerSecond} vs ${empty.burnDownJobsPerSecond} jobs/s (×${ratio(full.burnDownJobsPerSecond, empty.burnDownJobsPerSecond)}) while ${full.historyDeletedDuringBurnDown.toLocaleString("en")} history jobs were deleted`,
    });
  }
  return targets;
}

function table(head: string[], rows: (string | number)[][]): string {
  const cells = rows.map((r) => r.map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [fmt(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(fmt)].join("\n");
}

export function renderTables(report: BenchReport): string {
  const out: string[] = [];
  const { burnDown, precision, fairness, catchUp, scale, history } = report.scenarios;
  if (burnDown) {
    const tick = burnDown.find((r) => r.system === "tick")?.jobsPerSecond ?? 0;
    out.push(
      "Burn-down: each job POSTs to a local sink (same undici client, same concurrency), created → completed",
      table(
        ["system", "jobs", "seconds", "jobs/s", "tick / system", "commits/job", "WAL bytes/job", "Redis cmds/job"],
        burnDown.map((r) => [r.system, r.jobs, r.seconds, r.jobsPerSecond, r.system === "tick" ? "-" : ratio(tick, r.jobsPerSecond), r.cost.commitsPerJob, r.cost.walBytesPerJob, r.cost.redisCommandsPerJob]),
      ),
    );
  }
  if (precision) {
    out.push("", "Due-time precision (start − due, database clock)", table(["jobs/s", "jobs", "p50 ms", "p99 ms", "max ms", "early"], precision.map((p) => [p.ratePerSecond, p.jobs, p.p50Ms, p.p99Ms, p.maxMs, p.early])));
  }
  if (fairness) {
    out.push(
      "",
      "Fairness (one shard): quiet tenant at 20 jobs/s; two noisy tenants, weights 3 and 1",
      table(
        ["burst jobs", "quiet p99 alone", "quiet p99 under burst", "ratio", "shares", "expected"],
        [[fairness.burstJobs, fairness.quietSoloP99Ms, fairness.quietUnderBurstP99Ms, fairness.quietRatio, fairness.shares.join(" / "), fairness.expectedShares.join(" / ")]],
      ),
    );
  }
  if (catchUp) {
    out.push("", "Catch-up after downtime", table(["backlog", "cap/s", "max/s", "mean/s", "seconds above cap", "seconds"], [[catchUp.backlog, catchUp.capPerSecond, catchUp.maxPerSecond, catchUp.meanPerSecond, catchUp.secondsAboveCap, catchUp.seconds]]));
  }
  if (scale) {
    out.push("", "Scale: scheduled future jobs in the table", table(["future jobs", "claim p50 ms", "claim p99 ms", "scheduler RSS MB", "burn-down jobs/s"], scale.map((s) => [s.futureJobs, s.claimP50Ms, s.claimP99Ms, s.schedulerRssMb, s.burnDownJobsPerSecond])));
  }
  if (history) {
    out.push(
      "",
      "History: finished jobs in history (past retention), claim and burn-down while retention deletes them",
      table(
        ["history jobs", "claim p50 ms", "claim p99 ms", "plan", "burn-down jobs/s", "history deleted meanwhile", "hot-table jobs after"],
        history.map((h) => [h.historyJobs, h.claimP50Ms, h.claimP99Ms, h.plan === history[0]!.plan ? "same" : "different", h.burnDownJobsPerSecond, h.historyDeletedDuringBurnDown, h.hotTableJobs]),
      ),
    );
  }
  if (report.targets?.length) {
    out.push("", "Targets (issues #9 and #10)", table(["target", "met", "measured"], report.targets.map((t) => [t.target, t.met ? "yes" : "NO", t.measured])));
  }
  return out.join("\n");
}
