import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { checkInvariants, type PhaseRun, type Verdict } from "./checker.js";
import { LEASE_TTL_MS, type Cluster, type Member } from "./cluster.js";
import { startCluster } from "./cluster.js";
import { checkLogs } from "./log-check.js";
import { checkMetrics, createMetricsRecorder, metricsTable } from "./metrics-check.js";
import { startFakeClockPostgres } from "./fake-clock-postgres.js";
import { PHASES, mixedPhase, type FaultContext, type Phase } from "./faults.js";
import { seededRandom } from "./random.js";
import { startChaosSink } from "./sink.js";
import { BODY_MARKER, HEADER_MARKER, createWorkload } from "./workload.js";
import { markdownTable } from "@tick/testing";

// npm run chaos [-- --duration 30m] [--seed N] [--json file] [--schedulers N] [--workers N] [--phase-seconds S] [--no-fake-clock]
//               [--rounds "scheduler frozen past its lease+dependency outage,Postgres unreachable+scheduler SIGKILL"]
// Without --duration: the short profile (every phase once, under 5 minutes). With it: the phases, then
// mixed rounds of random faults until the duration is used up.

function parseArgs(argv: string[]) {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const duration = get("duration");
  const durationMs = duration ? parseDuration(duration) : 0;
  return {
    durationMs,
    seed: Number(get("seed") ?? Math.floor(Math.random() * 2 ** 31)),
    json: get("json"),
    schedulers: Number(get("schedulers") ?? (durationMs ? 3 : 2)),
    workers: Number(get("workers") ?? (durationMs ? 3 : 2)),
    phaseMs: Number(get("phase-seconds") ?? (durationMs ? 20 : 10)) * 1_000,
    fakeClock: !argv.includes("--no-fake-clock"),
    /** Instead of the ordered phases: rounds of named phases run together, e.g. "scheduler SIGKILL+Postgres unreachable,Redis flushed". */
    rounds: get("rounds"),
  };
}

function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)$/.exec(text.trim());
  if (!m) throw new Error(`--duration: use e.g. 90s, 30m or 1h (got ${text})`);
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as "s" | "m" | "h"];
}

const started = Date.now();
const log = (line: string) => process.stdout.write(`[chaos ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The faults of a mixed round, run together: every one ends before the round does, even when another
 * failed (the heal that follows must not race a fault still restarting a process); the first failure is
 * then reported.
 */
async function allFaults(runs: Promise<void>[]): Promise<void> {
  const settled = await Promise.allSettled(runs);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
}

/**
 * On top of fault + 2 lease TTLs: the reaper's grace on an attempt lease (2 s), its interval and the
 * dispatch and relay hops (under 1 s), and a loaded 2-core machine shared with other work (1 s).
 */
const START_LAG_SLACK_MS = 4_000;

function table(verdict: Verdict): string {
  const head = ["phase", "scenarios", "faults", "jobs", "lost", "duplicate effects", "raw duplicate deliveries", "quiet lag p99 / max (ms)", "max start lag / bound (ms)"];
  const lines = verdict.rows.map((r) => [
    r.phase,
    r.scenarios,
    String(r.faults),
    String(r.jobs),
    String(r.lost),
    String(r.duplicateEffects),
    String(r.rawDuplicateDeliveries),
    r.quietP99LagMs === null ? "-" : `${r.quietP99LagMs} / ${r.quietMaxLagMs}`,
    `${r.maxStartLagMs ?? "-"} / ${r.startLagBoundMs ?? "-"}`,
  ]);
  const t = verdict.totals;
  lines.push(["total", "", String(t.faults), String(t.jobs), String(t.lost), String(t.duplicateEffects), String(t.rawDuplicateDeliveries), "", ""]);
  return markdownTable(head, lines);
}

/** The flow-key checks: what each saw, against what it is held to. */
function flowKeyTable(verdict: Verdict): string {
  const { capped, rated, debounce } = verdict.flowKeys;
  const rows = [
    [
      "per-key cap",
      `${capped.calls} calls over ${capped.keys} keys; at most ${capped.maxAtOnce} at once of attempts holding slots; ${capped.settledLeases} keyed attempts' leases settled by the reaper`,
      `at most ${capped.cap} at once; ${capped.overlapsExcused} overlaps excused beside a settled lease${capped.excusedAttempts.length ? ` (${capped.excusedAttempts.join(", ")})` : ""}`,
      String(capped.violations),
    ],
    [
      "per-key rate",
      `${rated.claims} claims over ${rated.keys} keys; at most ${rated.maxInPeriod} in one ${rated.periodMs} ms window; ${rated.overBucket} with no token in the replayed bucket`,
      `bucket of ${rated.limit} per ${rated.periodMs} ms: at most ${rated.periodBound} in any ${rated.periodMs} ms`,
      String(rated.overBucket + rated.keysOverPeriodBound),
    ],
    [
      "debounce",
      `${debounce.creates} creates, ${debounce.windows} windows (${debounce.folded} creates folded or answered, ${debounce.closedByMaxWait} trailing windows ran at maxWait, ${debounce.foldedAfterClaim} creates folded into a job already claimed); next trailing window opened at least ${debounce.minNextWindowAfterClaimMs ?? "-"} ms after the claim before it`,
      `each window's job ran once, with its latest (trailing) or first (leading) create's payload; ${debounce.lost} creates lost`,
      String(debounce.violations),
    ],
  ];
  const head = ["flow-key check", "seen", "held to", "violations"];
  return markdownTable(head, rows);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  log(`seed ${args.seed}; ${args.schedulers} schedulers, ${args.workers} workers; ${args.durationMs ? `${args.durationMs / 60_000} min` : "short profile"}`);
  const random = seededRandom(args.seed);
  // S14: the product's database clock starts shortly before Europe/Berlin springs forward (01:00 UTC), so
  // the every-two-seconds schedule crosses the transition during the early fault phases.
  const transition = new Date("2027-03-28T01:00:00Z");
  const fake = args.fakeClock ? await startFakeClockPostgres("2027-03-28 00:58:20", log) : null;
  if (fake) {
    process.env.DATABASE_URL = fake.url;
    log(`database clock injected: a private Postgres under libfaketime, starting 100 s before ${transition.toISOString()} (Europe/Berlin 02:00 → 03:00)`);
  } else {
    log(args.fakeClock ? "DST under an injected clock: SKIPPED (install the faketime package and Postgres server binaries)" : "DST under an injected clock: off (--no-fake-clock)");
  }
  const sink = await startChaosSink(random.next);
  const logDir = path.join(process.cwd(), ".data", "chaos", `seed-${args.seed}-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  // The store probe and the breaker gauges read every second (15 s and 10 s by default), so scrapes during
  // a 5 s outage see it (the metrics and the logs are judged against what happened).
  const cluster = await startCluster({
    schedulers: args.schedulers,
    workers: args.workers,
    log,
    logDir,
    distinctWorkerIds: true,
    env: {
      TICK_STORE_PROBE_INTERVAL: "1s",
      WORKER_BREAKER_METRICS_INTERVAL: "1s",
      // A 6 s outage opens the dependency's breaker (the default 60 s window and 20 calls would not).
      BREAKER_WINDOW: "5s",
      BREAKER_MIN_REQUESTS: "5",
      // Info, the default in production, so the log check reads every line about a job (CHAOS_LOG_LEVEL overrides).
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? "info",
    },
  });
  log(`process logs: ${logDir}`);
  const metrics = createMetricsRecorder(cluster, log);
  // The faults see the cluster with a last look at a member's metrics before any restart kills it.
  const faultCluster: Cluster = Object.assign(Object.create(cluster) as Cluster, {
    restart: async (m: Member, extraEnv?: Record<string, string>) => {
      await metrics.lastLook(m);
      return cluster.restart(m, extraEnv);
    },
  });
  let exitCode = 1;
  try {
    log(`console ${cluster.consoleUrl}, database ${cluster.db.name}`);
    const workload = await createWorkload({ pool: cluster.pool, consoleUrl: cluster.consoleUrl, sink, random, log });
    await workload.start();
    const done: PhaseRun[] = [];
    const runPhase = async (phase: Phase) => {
      const record: PhaseRun = { name: phase.name, scenarios: phase.scenarios, faults: 0, startedAt: Date.now(), endedAt: Infinity, faultMs: phase.faultMs };
      done.push(record);
      workload.setPhase(phase.name);
      metrics.setPhase(phase.name);
      log(`phase: ${phase.name} (${phase.scenarios})`);
      await metrics.scrapeAll("before");
      const ctx: FaultContext = { cluster: faultCluster, sink, workload, random, log, injected: () => void record.faults++, lastLook: (m) => metrics.lastLook(m) };
      // A few scrapes while the fault is on (the outages run from about 1 s to 6 s into the phase).
      const during = metrics.during([2_500, 4_000, 5_500]);
      // A fault action that itself fails (say, FLUSHALL while Redis restarts) is logged, not fatal: the
      // run goes on and the checker judges the product, not the harness.
      await phase.run(ctx, args.phaseMs).catch((err) => log(`fault action failed (${phase.name}): ${err instanceof Error ? err.message : String(err)}`));
      await during;
      await cluster.heal();
      record.endedAt = Date.now();
      await metrics.scrapeAll("after");
    };
    if (args.rounds) {
      for (const [i, round] of args.rounds.split(",").entries()) {
        const parts = round.split("+").map((name) => PHASES.find((p) => p.name === name.trim()) ?? (() => { throw new Error(`--rounds: no phase named "${name}" (phases: ${PHASES.map((p) => p.name).join("; ")})`); })());
        await runPhase({ name: `round ${i + 1}: ${parts.map((p) => p.name).join(" + ")}`, scenarios: parts.map((p) => p.scenarios).join(" "), faultMs: parts.length === 1 ? parts[0]!.faultMs : null, run: (ctx, ms) => allFaults(parts.map((p) => p.run(ctx, ms))) });
      }
    } else for (const phase of PHASES) await runPhase(phase);
    for (let round = 1; args.durationMs && Date.now() - started < args.durationMs; round++) await runPhase(mixedPhase(round));

    if (fake) {
      // A short run (a few --rounds) can end before the database clock reaches the transition: let the
      // schedule run on until it has crossed it, so every mode checks S14.
      const { rows } = await cluster.pool.query<{ left_ms: number }>(`SELECT extract(epoch FROM $1::timestamptz - now()) * 1000 + 10000 AS left_ms`, [transition]);
      const waitMs = Math.max(0, Number(rows[0]!.left_ms));
      if (waitMs > 0) {
        log(`waiting ${Math.round(waitMs / 1000)} s for the database clock to cross the DST transition`);
        await sleep(waitMs);
      }
    }
    log("drain: workload stopped, schedules paused, everything healed");
    workload.setPhase("drain");
    await workload.stop();
    await workload.pauseSchedules();
    sink.setDependencyDown(false);
    await cluster.heal();
    // Whatever the last outages dead-lettered is replayed once more (an operator's closing replay);
    // "dlq" jobs must end succeeded, one way or the other.
    await new Promise((r) => setTimeout(r, 4_000)); // the dependency's breaker closes first
    // A replay that met a later outage paused itself (S17: the root cause looked unfixed); the operator
    // resumes it now that the dependency is healthy. It must then complete like every other replay.
    const autoPaused = await cluster.pool.query<{ id: string }>(`SELECT id FROM dlq_replays WHERE status = 'auto_paused'`);
    await workload.resumeAutoPausedReplays(autoPaused.rows.map((r) => r.id));
    await workload.replayDeadDependencyJobs();
    const deadline = Date.now() + 180_000;
    for (;;) {
      const { rows } = await cluster.pool.query<{ live: string; outbox: string; replays: string }>(
        `SELECT (SELECT count(*) FROM jobs WHERE status IN ('scheduled', 'dispatched', 'running')) AS live,
                (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS outbox,
                (SELECT count(*) FROM dlq_replays WHERE finished_at IS NULL AND status = 'running') AS replays`,
      );
      const r = rows[0]!;
      if (Number(r.live) === 0 && Number(r.outbox) === 0 && Number(r.replays) === 0) break;
      if (Date.now() > deadline) {
        log(`drain timed out: ${r.live} live jobs, ${r.outbox} unpublished outbox rows, ${r.replays} running replays`);
        // What every other session of the database is doing, and who waits for whom: a stall's first clue.
        const sessions = await cluster.pool.query<Record<string, unknown>>(
          `SELECT pid, application_name, state, wait_event_type, wait_event, pg_blocking_pids(pid) AS blocked_by,
                  round(extract(epoch FROM now() - xact_start)) AS xact_s, left(regexp_replace(query, '\\s+', ' ', 'g'), 200) AS query
             FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`,
        );
        for (const row of sessions.rows) log(`  session ${JSON.stringify(row)}`);
        if (sessions.rows.length === 0) log("  no session of the database is active (nothing waits on a lock)");
        break;
      }
      await sleep(1_000);
    }
    // Webhooks of the last jobs are in flight through the outbox; give them a moment.
    await sleep(2_000);
    metrics.setPhase("drain");
    await metrics.scrapeAll("end");

    const verdict = await checkInvariants({
      pool: cluster.pool,
      sink,
      ops: workload.ops,
      phases: done,
      quietLagBoundMs: 5_000,
      leaseTtlMs: LEASE_TTL_MS,
      startLagSlackMs: START_LAG_SLACK_MS,
      // The outage's dependency, and the keyed tenant's queues: their flow keys' cap and rate hold jobs by
      // design (judged by the cap and rate checks instead), and a trailing debounce moves its job's due time
      // with each create (judged by the debounce check).
      heldDependencies: ["sink-dep", "sink-capped", "sink-rated", "sink-debounced-trailing"],
      dstTransition: fake ? { at: transition, zone: "Europe/Berlin", scheduleEverySeconds: 2 } : null,
    });
    // The metrics, judged against what happened.
    const metricChecks = await checkMetrics({ pool: cluster.pool, scrapes: metrics.scrapes, phases: done, outageDependency: "sink-dep", frozenIn: metrics.frozenIn });
    for (const c of metricChecks) if (!c.ok) verdict.violations.push(`metrics: ${c.check}: expected ${c.expected}, observed ${c.observed}`);
    // The logs: no API key, signing secret or request body; job lines name their tenant (and attempt lines their shard and epoch).
    const { rows: signing } = await cluster.pool.query<{ secret: string }>(`SELECT secret FROM signing_secrets`);
    const secrets = [
      ...Object.values(workload.tenants).map((t) => ({ what: `the API key of tenant ${t.name}`, value: t.apiKey })),
      ...signing.map((r) => ({ what: "a webhook signing secret", value: r.secret })),
      { what: "a job's request body", value: BODY_MARKER },
      { what: "a job's request header", value: HEADER_MARKER },
    ];
    const outputs = [
      // Exited incarnations were written to the log directory when they exited; the live ones are read now.
      ...fs.readdirSync(logDir).map((f) => ({ process: f.replace(/\.log$/, ""), text: fs.readFileSync(path.join(logDir, f), "utf8") })),
      { process: "console (live)", text: cluster.consoleProcess().output() },
      ...[...cluster.members.values()].map((m) => ({ process: `${m.name} (live)`, text: m.proc.output() })),
    ];
    const logs = checkLogs(outputs, secrets);
    for (const v of logs.violations.slice(0, 20)) verdict.violations.push(`logs: ${v}`);
    process.stdout.write(`\n${table(verdict)}\n\n${flowKeyTable(verdict)}\n\n${metricsTable(metricChecks)}\n\n`);
    log(`metrics: ${metrics.scrapes.length} scrapes; logs: ${logs.lines} lines read (${logs.jobLines} about a job or attempt), ${secrets.length} secrets and markers looked for (${signing.length} signing secrets), ${logs.violations.length} problems`);
    log(`facts: ${JSON.stringify(verdict.facts)}`);
    for (const r of verdict.rows) if (r.quietSlowest && (r.quietMaxLagMs ?? 0) > 2_000) log(`slowest quiet job in "${r.phase}": ${r.quietSlowest}`);
    for (const r of verdict.rows) if (r.startLagSlowest && (r.maxStartLagMs ?? 0) > 2 * LEASE_TTL_MS) log(`slowest start in "${r.phase}": ${r.startLagSlowest}`);
    const report = {
      seed: args.seed,
      injectedDatabaseClock: fake ? "2027-03-28T00:58:20Z" : null,
      durationMs: Date.now() - started,
      machine: { cpus: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version },
      ...verdict,
      metricChecks,
      logs: { lines: logs.lines, jobLines: logs.jobLines, problems: logs.violations },
    };
    if (args.json) {
      fs.mkdirSync(path.dirname(args.json), { recursive: true });
      fs.writeFileSync(args.json, JSON.stringify(report, null, 2));
    }
    process.stdout.write(`${JSON.stringify({ seed: args.seed, totals: verdict.totals, violations: verdict.violations.length })}\n`);
    if (fake) log(`deadlocks broken by the harness (the injected clock stops the server's own detector): ${fake.deadlocksBroken()}`);
    if (verdict.violations.length) {
      log(`FAILED: ${verdict.violations.length} invariant violations (seed ${args.seed} reproduces the plan):`);
      for (const v of verdict.violations.slice(0, 50)) log(`  ${v}`);
    } else {
      log(`passed: ${verdict.totals.jobs} jobs, ${verdict.totals.faults} faults, 0 lost, 0 duplicate effects (seed ${args.seed})`);
      exitCode = 0;
    }
  } finally {
    await cluster.stop().catch((err) => log(`stopping the cluster failed: ${err}`));
    await sink.close();
    await fake?.stop();
  }
  process.exit(exitCode);
}

main().catch((err) => {
  log(`chaos run failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});
