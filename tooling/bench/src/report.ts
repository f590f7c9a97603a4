import { markdownTable as table } from "@tick/testing";
import { PACED_RATE, SINGLE_CONCURRENCY, type ApiIngestResult } from "./api-ingest.js";
import { CEILING } from "./peers.js";
import type { RecurrenceResult } from "./recurrence-scale.js";
import type { ScaleOutResult } from "./scale-out.js";
import type { BurnDownResult, CatchUpResult, FairnessResult, HistoryResult, PrecisionResult, ScaleResult } from "./scenarios.js";

/**
 * One target of the benchmark, as written to the report: `met` is null when its scenario did not run
 * in this invocation (not run is not met). `value` is the figure judged, `limit` the bound it must
 * satisfy in the direction `op` (value >= limit, value <= limit, or exactly: value == limit); `measured`
 * says it in words.
 */
export interface Target {
  name: string;
  met: boolean | null;
  value: number | null;
  limit: number;
  op: ">=" | "<=" | "<" | "==";
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
    recurrence?: RecurrenceResult;
    apiIngest?: ApiIngestResult;
    scaleOut?: ScaleOutResult[];
    keyFairness?: KeyFairnessResult;
    keyCap?: CapAccuracyResult;
    keyRate?: RateAccuracyResult;
    debounce?: DebounceResult;
    keyClaim?: KeyClaimResult;
  };
  targets?: Target[];
}

import type { CapAccuracyResult, DebounceResult, KeyClaimResult, KeyFairnessResult, RateAccuracyResult } from "./flow-keys.js";

// Three decimals: a ratio is judged as measured, never rounded onto its limit (1.504 is over 1.5).
const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1000) / 1000 : 0);

/** A target judged on a figure, or not run when the figure is missing (its scenario did not run). */
function target(name: string, op: Target["op"], limit: number, value: number | null | undefined, measured = ""): Target {
  if (value === null || value === undefined || Number.isNaN(value)) return { name, met: null, value: null, limit, op, measured: "-" };
  const met = op === ">=" ? value >= limit : op === "<=" ? value <= limit : op === "<" ? value < limit : value === limit;
  return { name, met, value, limit, op, measured: measured || String(value) };
}

/** The benchmark's targets (the history scenario's among them), each judged on this run's figures only. */
export function judge(report: BenchReport): Target[] {
  const { burnDown, precision, fairness, scale, history, recurrence, apiIngest, scaleOut } = report.scenarios;
  const rate = (s: string) => burnDown?.find((r) => r.system === s)?.jobsPerSecond;
  const tick = rate("tick");
  const against = (peer: string) => (tick !== undefined && rate(peer) ? ratio(tick, rate(peer)!) : undefined);
  const vs = (peer: string) => `${tick} vs ${rate(peer)} jobs/s (×${against(peer)})`;
  const cost = burnDown?.find((r) => r.system === "tick")?.cost;
  const cpuOf = (system: string) => burnDown?.find((r) => r.system === system)?.machineCpuMsPerJob;
  const at = (r: number) => precision?.find((p) => p.ratePerSecond === r);
  const early = precision?.reduce((a, p) => a + p.early, 0);
  const small = scale?.[0];
  const large = scale && scale.length >= 2 ? scale[scale.length - 1] : undefined;
  const claimRatio = small && large ? ratio(large.claimP50Ms, small.claimP50Ms) : undefined;
  const first = recurrence?.rounds[0];
  const wrong = recurrence ? recurrence.missing + recurrence.duplicate + recurrence.extra : undefined;
  const batch = apiIngest?.runs.find((r) => r.endpoint === "batch" && r.concurrency === 1);
  const paced = apiIngest?.runs.find((r) => r.endpoint === "single" && r.ratePerSecond === PACED_RATE);
  const mostInFlight = SINGLE_CONCURRENCY[SINGLE_CONCURRENCY.length - 1];
  const busiest = apiIngest?.runs.find((r) => r.endpoint === "single" && r.concurrency === mostInFlight);
  const targets: Target[] = [
    target("burn-down / pg-boss's (ratio)", ">=", 1.2, against("pg-boss"), vs("pg-boss")),
    target("burn-down / graphile-worker's (ratio)", ">=", 0.6, against("graphile-worker"), vs("graphile-worker")),
    target(`burn-down / the bare ${CEILING} (ratio)`, ">=", 0.5, against(CEILING), vs(CEILING)),
    target(
      "machine CPU per job, tick / pg-boss (median rounds)",
      "<",
      1,
      cpuOf("tick") !== undefined && cpuOf("pg-boss") ? ratio(cpuOf("tick")!, cpuOf("pg-boss")!) : undefined,
      `${cpuOf("tick")} vs ${cpuOf("pg-boss")} ms`,
    ),
    target("(stretch) burn-down at least graphile-worker's (ratio)", ">=", 1, against("graphile-worker"), vs("graphile-worker")),
    target("Postgres commits per job", "<=", 0.3, cost?.commitsPerJob),
    target("WAL bytes per job", "<=", 3_000, cost?.walBytesPerJob),
    target("Redis commands per job", "<=", 12, cost?.redisCommandsPerJob),
    target("p99 start − due at 500 jobs/s (ms)", "<=", 50, at(500)?.p99Ms),
    target("p50 start − due at 100 jobs/s (ms)", "<=", 25, at(100)?.p50Ms),
    target("jobs started before their due time", "<=", 0, early),
    target("quiet tenant's p99 under the burst / its solo p99", "<=", 1.5, fairness?.quietRatio, fairness && `${fairness.quietUnderBurstP99Ms} vs ${fairness.quietSoloP99Ms} ms (×${fairness.quietRatio})`),
    target("shares off the weights (points)", "<=", 5, fairness?.shareErrorPct, fairness && `${fairness.shares.join(" / ")} for ${fairness.expectedShares.join(" / ")}`),
    target(
      `recurrence: occurrences materialised per second (${recurrence?.schedules.toLocaleString("en") ?? "100,000"} schedules)`,
      ">=",
      10_000,
      first?.perSecond,
      first && `${first.created.toLocaleString("en")} occurrences in ${first.seconds} s`,
    ),
    target("recurrence: missed, duplicate or extra occurrences", "<=", 0, wrong, recurrence && `${recurrence.missing} missed, ${recurrence.duplicate} duplicate, ${recurrence.extra} extra`),
    target(
      "batch ingest (POST /jobs/batch, 1 at a time) / bare insert rate",
      ">=",
      0.5,
      batch && apiIngest ? ratio(batch.jobsPerSecond, apiIngest.bareInsert.jobsPerSecond) : undefined,
      batch && apiIngest && `${batch.jobsPerSecond} vs ${apiIngest.bareInsert.jobsPerSecond} jobs/s`,
    ),
    target(`single creates accepted per second, ${mostInFlight} in flight`, ">=", 1_000, busiest?.jobsPerSecond, busiest && `${busiest.accepted} of ${busiest.requests} in ${busiest.seconds} s, p99 ${busiest.p99Ms} ms`),
    target(`single-create p99 at ${PACED_RATE} requests/s (ms)`, "<=", 50, paced?.p99Ms),
    target("admission fail-opens with Redis up", "<=", 0, apiIngest?.failOpens, apiIngest && `${apiIngest.failOpens} responses without RateLimit headers, ${apiIngest.failOpenLogLines} 'failing open' log lines`),
    target(
      `claim p50 at ${large?.futureJobs.toLocaleString("en") ?? "1,000,000"} / at ${small?.futureJobs.toLocaleString("en") ?? "10,000"} scheduled jobs (flat)`,
      "<=",
      1.5,
      claimRatio,
      small && large && `p50 ${large.claimP50Ms} vs ${small.claimP50Ms} ms, p99 ${large.claimP99Ms} vs ${small.claimP99Ms} ms`,
    ),
    target(`scheduler RSS at a ${large?.futureJobs.toLocaleString("en") ?? "1,000,000"} backlog (MB)`, "<=", 200, large?.schedulerRssMb),
  ];
  targets.push(...flowKeyTargets(report));
  if (scaleOut?.length) {
    const wrongRuns = scaleOut.reduce((n, r) => n + r.extraStarts + r.duplicateCalls + r.notSucceeded, 0);
    const uneven = Math.max(...scaleOut.map((r) => Math.max(...r.shardsPerScheduler) - Math.min(...r.shardsPerScheduler)));
    const best = scaleOut.reduce((a, r) => (r.jobsPerSecond > a.jobsPerSecond ? r : a));
    const largest = scaleOut[scaleOut.length - 1]!;
    targets.push(
      target("scale-out: extra starts, duplicate calls or jobs not succeeded, all sizes", "<=", 0, wrongRuns),
      target("scale-out: shards per scheduler, most − fewest", "<=", 1, uneven),
      target(
        `scale-out: ${largest.schedulers} schedulers × ${largest.workers} workers / the best size's rate (no contention collapse)`,
        ">=",
        0.5,
        ratio(largest.jobsPerSecond, best.jobsPerSecond),
        `${largest.jobsPerSecond} vs ${best.jobsPerSecond} jobs/s (${best.schedulers} × ${best.workers})`,
      ),
    );
  }
  if (history && history.length >= 2) {
    const empty = history[0]!;
    const full = history[history.length - 1]!;
    targets.push(
      target(
        `history: claim p50 with ${full.historyJobs.toLocaleString("en")} history jobs / with ${empty.historyJobs.toLocaleString("en")}, plan unchanged`,
        "<=",
        1.5,
        // A changed plan fails the target whatever the latency.
        full.plan === empty.plan ? ratio(full.claimP50Ms, empty.claimP50Ms) : Number.POSITIVE_INFINITY,
        `plan ${full.plan === empty.plan ? "identical" : "DIFFERENT"}; p50 ${full.claimP50Ms} vs ${empty.claimP50Ms} ms, p99 ${full.claimP99Ms} vs ${empty.claimP99Ms} ms`,
      ),
      target(
        "history: burn-down while retention deletes history / without history",
        ">=",
        0.8,
        full.historyDeletedDuringBurnDown > 0 ? ratio(full.burnDownJobsPerSecond, empty.burnDownJobsPerSecond) : 0,
        `${full.burnDownJobsPerSecond} vs ${empty.burnDownJobsPerSecond} jobs/s while ${full.historyDeletedDuringBurnDown.toLocaleString("en")} history jobs were deleted`,
      ),
    );
  }
  return targets;
}


export function renderTables(report: BenchReport): string {
  const out: string[] = [];
  const { burnDown, precision, fairness, catchUp, scale, history, recurrence, apiIngest, scaleOut } = report.scenarios;
  if (burnDown) {
    const tick = burnDown.find((r) => r.system === "tick")?.jobsPerSecond ?? 0;
    const ceiling = burnDown.find((r) => r.system === CEILING)?.jobsPerSecond ?? 0;
    out.push(
      `Burn-down: each job POSTs to a local sink (same undici client, same concurrency), created → completed; ${CEILING}: the same calls with no queue. Each system ran once per round, rounds in rotated order; its figures are its median round's; CPU ms/job is the whole machine's`,
      table(
        ["system", "jobs", "seconds", "jobs/s", "rounds (jobs/s)", `system / ${CEILING}`, "tick / system", "CPU ms/job", "commits/job", "WAL bytes/job", "Redis cmds/job"],
        burnDown.map((r) => [
          r.system,
          r.jobs,
          r.seconds,
          r.jobsPerSecond,
          (r.roundRates ?? [r.jobsPerSecond]).join(" / "),
          ceiling ? ratio(r.jobsPerSecond, ceiling) : "-",
          r.system === "tick" || r.system === CEILING ? "-" : ratio(tick, r.jobsPerSecond),
          r.machineCpuMsPerJob,
          r.cost.commitsPerJob,
          r.cost.walBytesPerJob,
          r.cost.redisCommandsPerJob,
        ]),
      ),
    );
  }
  if (precision) {
    out.push("", "Due-time precision (start − due, database clock)", table(["jobs/s", "jobs", "p50 ms", "p99 ms", "max ms", "early", "p99 due → claimed", "p99 claimed → started"], precision.map((p) => [p.ratePerSecond, p.jobs, p.p50Ms, p.p99Ms, p.maxMs, p.early, p.split?.claimP99Ms ?? "-", p.split?.startP99Ms ?? "-"])));
  }
  if (fairness) {
    out.push(
      "",
      "Fairness (one shard): quiet tenant at 20 jobs/s; two noisy tenants, weights 3 and 1",
      table(
        ["burst jobs", "quiet p99 alone", "quiet p99 under burst", "ratio", "p99 due → claimed (alone / burst)", "p99 claimed → started (alone / burst)", "shares", "expected"],
        [[
          fairness.burstJobs, fairness.quietSoloP99Ms, fairness.quietUnderBurstP99Ms, fairness.quietRatio,
          `${fairness.quietSplit.solo.claimP99Ms} / ${fairness.quietSplit.underBurst.claimP99Ms}`,
          `${fairness.quietSplit.solo.startP99Ms} / ${fairness.quietSplit.underBurst.startP99Ms}`,
          fairness.shares.join(" / "), fairness.expectedShares.join(" / "),
        ]],
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
  if (recurrence) {
    out.push(
      "",
      `Recurrence: ${recurrence.schedules.toLocaleString("en")} schedules (every minute, hourly, daily; ${recurrence.zones} zones), occurrences turned into jobs`,
      table(
        ["due at", "occurrences due", "jobs created", "seconds", "per second", "created after due", "not taken in time"],
        recurrence.rounds.map((r) => [r.dueAt, r.due, r.created, r.seconds, r.perSecond, r.lateJobs, r.notTaken]),
      ),
      `missed ${recurrence.missing}, duplicate ${recurrence.duplicate}, extra ${recurrence.extra}`,
    );
  }
  if (apiIngest) {
    out.push(
      "",
      `API ingest through the console (bare SQL insert of the same rows: ${apiIngest.bareInsert.jobsPerSecond} jobs/s)`,
      table(
        ["endpoint", "load", "requests", "jobs accepted", "jobs/s", "p50 ms", "p99 ms", "errors", "fail-opens"],
        apiIngest.runs.map((r) => [
          r.endpoint === "batch" ? `POST /jobs/batch (${r.batchSize})` : "POST /jobs",
          r.ratePerSecond ? `${r.ratePerSecond} req/s` : `${r.concurrency} concurrent`,
          r.requests,
          r.accepted,
          r.jobsPerSecond,
          r.p50Ms,
          r.p99Ms,
          r.errors,
          r.failOpens,
        ]),
      ),
    );
  }
  if (scaleOut) {
    out.push(
      "",
      "Scale-out: the same burn-down (16 tenants, one per shard) with 1, 2 and 4 schedulers and 1, 2 and 4 workers on this machine",
      table(
        ["schedulers", "workers", "jobs", "seconds", "jobs/s", "CPU ms/job", "shards per scheduler", "extra starts", "duplicate calls", "not succeeded"],
        scaleOut.map((r) => [r.schedulers, r.workers, r.jobs, r.seconds, r.jobsPerSecond, r.machineCpuMsPerJob, r.shardsPerScheduler.join(" / "), r.extraStarts, r.duplicateCalls, r.notSucceeded]),
      ),
    );
  }
  out.push(...flowKeyTables(report));
  if (report.targets?.length) {
    const verdict = (t: Target) => (t.met === null ? "not run" : t.met ? "met" : "NOT MET");
    out.push(
      "",
      "Targets",
      table(["target", "", "limit", "result", "measured"], report.targets.map((t) => [t.name, t.op, t.limit, verdict(t), t.measured])),
    );
  }
  return out.join("\n");
}

/** The flow-key scenarios' targets (flow-keys.ts). */
function flowKeyTargets(report: BenchReport): Target[] {
  const { keyFairness, keyCap, keyRate, debounce, keyClaim } = report.scenarios;
  const n = (x: number) => x.toLocaleString("en");
  return [
    target(
      `key fairness: quiet keys' p99 beside one key's ${keyFairness ? n(keyFairness.burstJobs) : "50,000"}-job burst / alone`,
      "<=",
      1.5,
      keyFairness?.quietRatio,
      keyFairness && `${keyFairness.quietUnderBurstP99Ms} vs ${keyFairness.quietSoloP99Ms} ms (×${keyFairness.quietRatio}), ${keyFairness.quietKeys} quiet keys`,
    ),
    target(
      "key cap: most calls of one key at once at perKeyConcurrency 2 (exactly 2)",
      "==",
      2,
      keyCap?.maxConcurrentPerKey,
      keyCap && `${keyCap.maxConcurrentPerKey}: ${keyCap.keysAtCap} of ${n(keyCap.keys)} keys reached 2, ${keyCap.keysOverCap} went over`,
    ),
    target(
      "key cap: throughput with keys / without",
      ">=",
      0.8,
      keyCap?.throughputRatio,
      keyCap && `${keyCap.keyedJobsPerSecond} vs ${keyCap.plainJobsPerSecond} jobs/s (×${keyCap.throughputRatio}), ${n(keyCap.jobs)} jobs of ${keyCap.callMs} ms`,
    ),
    target(
      "key rate: calls per key in a whole second after the first, most off 5",
      "<=",
      1,
      keyRate?.maxDeviation,
      keyRate && `${keyRate.keySecondsOff} of ${n(keyRate.keySeconds)} key-seconds off by more than 1 (${keyRate.keys} keys, ${keyRate.seconds} s, two schedulers)`,
    ),
    target(
      "debounce: windows not run exactly once with their last payload, or creates refused",
      "<=",
      0,
      debounce ? debounce.windows - debounce.windowsRunOnceWithLastPayload + debounce.strayRuns + debounce.createErrors : undefined,
      debounce &&
        `${n(debounce.runs)} runs for ${n(debounce.windows)} windows of ${n(debounce.keys)} keys: ${n(debounce.windowsRunOnceWithLastPayload)} once with the last payload, ${debounce.windowsNotRun} never, ${debounce.windowsRunTwiceOrMore} twice or more, ${debounce.strayRuns} stray; ${debounce.createErrors} creates refused`,
    ),
    target(
      `debounce: creates per second through the API (${debounce ? n(debounce.creates) : "100,000"} offered in ${debounce?.offeredSeconds ?? 10} s)`,
      ">=",
      debounce ? Math.round(debounce.creates / debounce.offeredSeconds) : 10_000,
      debounce?.createsPerSecond,
      debounce && `${n(debounce.creates)} answered in ${debounce.createSeconds} s`,
    ),
    target(
      `key claim: p50 over ${keyClaim ? n(keyClaim.keyedJobs) : "1,000,000"} due jobs of ${keyClaim ? n(keyClaim.keyedKeys) : "100,000"} keys / over ${keyClaim ? n(keyClaim.plainJobs) : "10,000"} without keys`,
      "<=",
      1.5,
      keyClaim?.ratio,
      keyClaim && `p50 ${keyClaim.keyed.p50Ms} vs ${keyClaim.plain.p50Ms} ms, p99 ${keyClaim.keyed.p99Ms} vs ${keyClaim.plain.p99Ms} ms`,
    ),
  ];
}

/** The flow-key scenarios' tables (flow-keys.ts). */
function flowKeyTables(report: BenchReport): string[] {
  const { keyFairness: f, keyCap: c, keyRate: r, debounce: d, keyClaim: k } = report.scenarios;
  const out: string[] = [];
  if (f) {
    out.push(
      "",
      `Key fairness (one tenant, one queue, shard 0): ${f.quietKeys} quiet keys at 1 job/s each, alone and beside one key's burst`,
      table(
        ["burst jobs", "burst drained s", "quiet jobs (alone / burst)", "quiet p99 alone", "quiet p99 beside the burst", "ratio", "p99 due → claimed (alone / burst)", "p99 claimed → started (alone / burst)"],
        [[
          f.burstJobs, f.burstSeconds, `${f.quietJobs.solo} / ${f.quietJobs.underBurst}`, f.quietSoloP99Ms, f.quietUnderBurstP99Ms, f.quietRatio,
          `${f.quietSplit.solo.claimP99Ms} / ${f.quietSplit.underBurst.claimP99Ms}`, `${f.quietSplit.solo.startP99Ms} / ${f.quietSplit.underBurst.startP99Ms}`,
        ]],
      ),
    );
  }
  if (c) {
    out.push(
      "",
      `Key cap: perKeyConcurrency ${c.cap}, calls of ${c.callMs} ms, most calls of one key at once at the sink; the same jobs without keys`,
      table(
        ["keys", "jobs", "most at once", "keys at the cap", "keys over it", "jobs/s with keys", "jobs/s without", "ratio", "mean open (of keys × cap)", "freed slot empty p50 / p99 ms"],
        [[c.keys, c.jobs, c.maxConcurrentPerKey, c.keysAtCap, c.keysOverCap, c.keyedJobsPerSecond, c.plainJobsPerSecond, c.throughputRatio, `${c.keyedMeanOpen} (${c.keys * c.cap})`, `${c.slotRefillP50Ms} / ${c.slotRefillP99Ms}`]],
      ),
    );
  }
  if (r) {
    const calls = Object.keys(r.histogram).map(Number).sort((a, b) => a - b);
    out.push(
      "",
      `Key rate: ${r.keys} keys at perKeyRate ${r.ratePerSecond}/s for ${r.seconds} s, two schedulers; calls per key in each whole second after the first (sink clock)`,
      table(
        ["key-seconds", "off by more than 1", "largest deviation", "calls/s in all", ...calls.map((x) => `${x} calls`)],
        [[r.keySeconds, r.keySecondsOff, r.maxDeviation, r.meanCallsPerSecond, ...calls.map((x) => r.histogram[String(x)]!)]],
      ),
    );
  }
  if (d) {
    out.push(
      "",
      `Debounce through the API: trailing, period ${d.periodMs} ms, ${d.creates.toLocaleString("en")} creates over ${d.keys.toLocaleString("en")} keys offered in ${d.offeredSeconds} s`,
      table(
        ["creates/s", "seconds", "opened / folded / refused", "windows", "most a key", "runs", "once with the last payload", "never run", "twice or more", "stray"],
        [[d.createsPerSecond, d.createSeconds, `${d.opened} / ${d.folded} / ${d.createErrors}`, d.windows, d.maxWindowsPerKey, d.runs, d.windowsRunOnceWithLastPayload, d.windowsNotRun, d.windowsRunTwiceOrMore, d.strayRuns]],
      ),
    );
  }
  if (k) {
    out.push(
      "",
      "Key claim: the dispatcher's claim of 100 (rolled back), 200 times",
      table(
        ["due jobs", "keys", "claim p50 ms", "claim p99 ms", "claimed"],
        [
          [k.plainJobs, "none", k.plain.p50Ms, k.plain.p99Ms, k.plain.claimed],
          [k.fewKeys.jobs, k.fewKeys.keys, k.fewKeys.p50Ms, k.fewKeys.p99Ms, k.fewKeys.claimed],
          [k.keyedJobs, k.keyedKeys, k.keyed.p50Ms, k.keyed.p99Ms, k.keyed.claimed],
        ],
      ),
    );
  }
  return out;
}
