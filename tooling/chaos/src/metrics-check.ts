import type pg from "pg";
import { markdownTable, samples, type Sample } from "@tick/testing";
import type { Cluster, Member } from "./cluster.js";

export type { Sample };

/** One process's /metrics at one moment. */
export interface Scrape {
  /** console, scheduler-1, worker-2, ... */
  process: string;
  role: "console" | "scheduler" | "worker";
  /** The process incarnation (its PID): counters start again at 0 in each. */
  incarnation: number;
  /** SCHEDULER_ID/WORKER_ID of the incarnation (a worker's is its own per start: distinctWorkerIds). */
  id: string;
  /** Its TICK_TEST_CLOCK_SKEW_MS (0 unless skewed). */
  skewMs: number;
  phase: string;
  moment: string;
  at: number;
  samples: Sample[];
}

/** The Prometheus text format's `tick_` series (comments and other series skipped). */
export function parseMetrics(text: string): Sample[] {
  return samples(text).filter((s) => s.name.startsWith("tick_"));
}

type Filter = Record<string, string>;
const matches = (s: Sample, name: string, filter: Filter = {}) => s.name === name && Object.entries(filter).every(([k, v]) => s.labels[k] === v);
/** Sum of a metric's series in one scrape (over the labels not in the filter). */
const sumOf = (scrape: Scrape, name: string, filter?: Filter) => scrape.samples.filter((s) => matches(s, name, filter)).reduce((a, s) => a + s.value, 0);
const valuesOf = (scrape: Scrape, name: string, filter?: Filter) => scrape.samples.filter((s) => matches(s, name, filter)).map((s) => s.value);

/**
 * Scrapes every process of the chaos cluster (console, schedulers, workers) and keeps each scrape, by
 * process incarnation: a restarted process's counters start at 0 again, so totals are sums over
 * incarnations of each one's last scrape. A frozen process is not asked (it would not answer).
 */
export function createMetricsRecorder(cluster: Cluster, log: (line: string) => void) {
  const scrapes: Scrape[] = [];
  /** Per phase, the processes a scrape found frozen (not asked): the fault's own record of whom it froze. */
  const frozenIn = new Map<string, Set<string>>();
  let phase = "setup";
  const get = async (port: number): Promise<Sample[] | null> => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3_000) });
      return res.ok ? parseMetrics(await res.text()) : null;
    } catch {
      return null;
    }
  };
  const scrapeMember = async (m: Member, moment: string) => {
    if (m.frozen) frozenIn.set(phase, (frozenIn.get(phase) ?? new Set()).add(m.name));
    if (m.frozen || !cluster.alive(m)) return;
    const samples = await get(m.healthPort);
    if (samples) scrapes.push({ process: m.name, role: m.role, incarnation: m.proc.child.pid ?? 0, id: m.id, skewMs: Number(m.extraEnv.TICK_TEST_CLOCK_SKEW_MS ?? 0), phase, moment, at: Date.now(), samples });
  };
  const scrapeConsole = async (moment: string) => {
    const samples = await get(cluster.consoleMetricsPort);
    if (samples) scrapes.push({ process: "console", role: "console", incarnation: cluster.consoleProcess().child.pid ?? 0, id: "console", skewMs: 0, phase, moment, at: Date.now(), samples });
  };
  return {
    scrapes,
    frozenIn,
    setPhase(name: string) {
      phase = name;
    },
    /** Every process now (concurrently). */
    async scrapeAll(moment: string) {
      await Promise.all([scrapeConsole(moment), ...[...cluster.members.values()].map((m) => scrapeMember(m, moment))]);
    },
    /** One member's last look before the harness kills or restarts it (its counters die with it). */
    async lastLook(m: Member) {
      const current = cluster.members.get(m.name) ?? m;
      await scrapeMember(current, "before kill");
    },
    /** Scrapes at these offsets (ms) from now, while a phase's fault runs; resolves when all are done. */
    during(offsetsMs: number[]): Promise<void> {
      const started = Date.now();
      return (async () => {
        for (const at of offsetsMs) {
          const wait = started + at - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          await this.scrapeAll("during").catch((err: unknown) => log(`scrape failed: ${String(err)}`));
        }
      })();
    },
  };
}

/** One metrics check in the suite's report. */
export interface MetricCheck {
  check: string;
  scenarios: string;
  expected: string;
  observed: string;
  ok: boolean;
}

/** Last scrape of each incarnation of a role taken at or before `until` (ms), by incarnation. */
function lastPerIncarnation(scrapes: Scrape[], role: Scrape["role"], until = Infinity): Map<number, Scrape> {
  const last = new Map<number, Scrape>();
  for (const s of scrapes) if (s.role === role && s.at <= until) last.set(s.incarnation, s);
  return last;
}

/** A counter's growth over [from, to] summed over a role's incarnations (one started inside counts from 0). */
export function counterDelta(scrapes: Scrape[], role: Scrape["role"], name: string, filter: Filter, from: number, to: number): number {
  const before = lastPerIncarnation(scrapes, role, from);
  let delta = 0;
  for (const [inc, s] of lastPerIncarnation(scrapes, role, to)) delta += sumOf(s, name, filter) - (before.has(inc) ? sumOf(before.get(inc)!, name, filter) : 0);
  return delta;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/**
 * Judges the scrapes against what happened: counts against the database, and each fault's own signal
 * during (or right after) its phase. Only what the short profile really does is asserted; a phase the run
 * did not have (another --rounds plan) is reported as skipped.
 */
export async function checkMetrics(args: {
  pool: pg.Pool;
  scrapes: Scrape[];
  phases: { name: string; startedAt: number; endedAt: number }[];
  /** The outage's dependency key (the dependency outage phase). */
  outageDependency: string;
  /** Per phase, the processes found frozen when a scrape came round (MetricsRecorder.frozenIn). */
  frozenIn?: ReadonlyMap<string, ReadonlySet<string>>;
}): Promise<MetricCheck[]> {
  const { scrapes, pool } = args;
  const checks: MetricCheck[] = [];
  const phase = (name: string) => args.phases.find((p) => p.name === name);
  const inPhase = (name: string, moment?: string) => scrapes.filter((s) => s.phase === name && (moment === undefined || s.moment === moment));
  /** From the phase's last "before" scrape to its last "after" scrape: the counters' growth across the phase. */
  const window = (name: string): [number, number] => {
    const list = inPhase(name);
    const before = list.filter((s) => s.moment === "before").map((s) => s.at);
    const after = list.filter((s) => s.moment === "after").map((s) => s.at);
    return [before.length ? Math.max(...before) : phase(name)!.startedAt, after.length ? Math.max(...after) : phase(name)!.endedAt];
  };
  const skipped = (check: string, scenarios: string, what: string) => checks.push({ check, scenarios, expected: what, observed: "phase not run", ok: true });

  // Counts against the database, per worker incarnation (each one's attempts carry its own worker_id).
  const { rows } = await pool.query<{ worker_id: string; started: string; completed: string }>(
    `SELECT worker_id, count(*) FILTER (WHERE started_at IS NOT NULL) AS started, count(*) FILTER (WHERE status IN ('succeeded', 'failed')) AS completed
       FROM history.attempts_all WHERE worker_id IS NOT NULL GROUP BY worker_id`,
  );
  const db = new Map(rows.map((r) => [r.worker_id, { started: Number(r.started), completed: Number(r.completed) }]));
  const finalAt = Math.max(0, ...scrapes.filter((s) => s.moment === "end").map((s) => s.at));
  const lastByIncarnation = lastPerIncarnation(scrapes, "worker");
  const judgeCount = (check: string, scenarios: string, metric: (s: Scrape) => number, dbField: "started" | "completed") => {
    let counted = 0;
    let inDb = 0;
    let unobserved = 0;
    const wrong: string[] = [];
    const seenIds = new Set<string>();
    for (const s of lastByIncarnation.values()) {
      seenIds.add(s.id);
      const c = metric(s);
      const d = db.get(s.id)?.[dbField] ?? 0;
      counted += c;
      inDb += d;
      // Alive at the end: its last scrape came after the drain, so its counter must equal the database.
      // Killed or crashed: what it did after its last scrape died with it; it may not count more.
      if (s.moment === "end" && s.at === finalAt ? c !== d : c > d) wrong.push(`${s.id}: ${c} counted, ${d} in the database`);
      if (!(s.moment === "end")) unobserved += d - c;
    }
    // Incarnations never scraped (crashed before the first look) only have database rows.
    for (const [id, v] of db) {
      if (seenIds.has(id)) continue;
      inDb += v[dbField];
      unobserved += v[dbField];
    }
    checks.push({
      check,
      scenarios,
      expected: `= ${dbField} attempts in the database (${inDb}) per incarnation alive at the end; ≤ for killed ones`,
      observed: `${counted} over ${lastByIncarnation.size} incarnations (${unobserved} done by killed incarnations after their last scrape)${wrong.length ? `; ${wrong.join("; ")}` : ""}`,
      ok: wrong.length === 0 && counted > 0,
    });
  };
  judgeCount("attempts completed (tick_attempts_completed_total)", "S1 S11", (s) => sumOf(s, "tick_attempts_completed_total"), "completed");
  judgeCount("scheduling lag recorded (tick_scheduling_lag_seconds_count)", "S2 S12 S16", (s) => sumOf(s, "tick_scheduling_lag_seconds_count"), "started");

  // S2: the killed scheduler's shards are taken over at a higher epoch.
  const kill = phase("scheduler SIGKILL");
  if (!kill) skipped("takeover after a scheduler SIGKILL", "S2", "");
  else {
    const takeovers = counterDelta(scrapes, "scheduler", "tick_shard_lease_acquisitions_total", { kind: "takeover" }, ...window("scheduler SIGKILL"));
    // Each shard's epoch as the schedulers export it (the holder's), before and after the phase.
    const epochs = (list: Scrape[]) => {
      const by = new Map<string, number>();
      for (const s of list) for (const x of s.samples) if (x.name === "tick_shard_epoch") by.set(x.labels.shard ?? "", Math.max(by.get(x.labels.shard ?? "") ?? 0, x.value));
      return by;
    };
    const before = epochs(inPhase("scheduler SIGKILL", "before"));
    // During and after: a taken-over shard may be handed back for balance before the phase's last scrape.
    const after = epochs(inPhase("scheduler SIGKILL").filter((s) => s.moment !== "before"));
    const raised = [...after].filter(([shard, e]) => e > (before.get(shard) ?? Infinity)).map(([shard, e]) => `shard ${shard} ${before.get(shard)} → ${e}`);
    checks.push({
      check: "shard takeover after a scheduler SIGKILL (tick_shard_lease_acquisitions_total{kind=takeover}, tick_shard_epoch)",
      scenarios: "S2",
      expected: "takeovers > 0 in the phase; a shard's epoch raised",
      observed: `${takeovers} takeovers; ${raised.length} of ${after.size} shards seen at a higher epoch (${raised.slice(0, 3).join(", ")})`,
      ok: takeovers > 0 && raised.length > 0,
    });
  }

  // S8: the frozen leader loses its shards; what it tries to write afterwards is refused.
  const frozen = phase("scheduler frozen past its lease");
  if (!frozen) skipped("a frozen scheduler loses its leases", "S8", "");
  else {
    const name = "scheduler frozen past its lease";
    // The frozen one is the scheduler a scrape found frozen during the phase (it may answer again once thawed,
    // so not answering is no sign); it can only lose leases it held.
    const frozenNames = args.frozenIn?.get(name) ?? new Set<string>();
    const frozenBefore = inPhase(name, "before").filter((s) => s.role === "scheduler" && frozenNames.has(s.process));
    const held = frozenBefore.reduce((a, s) => a + sumOf(s, "tick_shards_held"), 0);
    // It learns of the loss at its first renewal after the thaw, which may come after the phase's last scrape:
    // its leases lost are counted from its scrape before the freeze to the last scrape of that incarnation.
    const lost = frozenBefore.reduce((a, before) => {
      const last = scrapes.filter((s) => s.incarnation === before.incarnation && s.role === "scheduler").at(-1) ?? before;
      return a + sumOf(last, "tick_shard_leases_lost_total") - sumOf(before, "tick_shard_leases_lost_total");
    }, 0);
    const stale = counterDelta(scrapes, "scheduler", "tick_stale_writes_rejected_total", {}, 0, Infinity);
    const { rows: r } = await pool.query<{ n: string }>(`SELECT coalesce(sum(stale_writes_rejected), 0) AS n FROM shard_leases`);
    const staleInDb = Number(r[0]!.n);
    checks.push({
      check: "a frozen scheduler loses its shard leases; stale writes refused (tick_shard_leases_lost_total, tick_stale_writes_rejected_total)",
      scenarios: "S8",
      expected: "leases lost > 0 if it held shards; stale writes counted ≤ shard_leases' count, > 0 when that is",
      observed: `${frozenBefore.map((s) => s.process).join(", ") || "?"} held ${held} shards when frozen, ${lost} leases lost; stale writes refused over the run: ${stale} counted, ${staleInDb} in shard_leases`,
      ok: frozenBefore.length > 0 && (held === 0 || lost > 0) && stale <= staleInDb && (staleInDb === 0 || stale > 0),
    });
  }

  // S11: the outage's breaker is open while the dependency is down.
  const outage = phase("dependency outage");
  if (!outage) skipped("breaker open during the dependency outage", "S11", "");
  else {
    const during = inPhase("dependency outage", "during").filter((s) => s.role === "worker");
    const open = during.filter((s) => valuesOf(s, "tick_breaker_state", { dependency: args.outageDependency }).some((v) => v === 2) || sumOf(s, "tick_breakers_open", { dependency: args.outageDependency }) > 0);
    const opened = counterDelta(scrapes, "worker", "tick_breaker_opened_total", { dependency: args.outageDependency }, ...window("dependency outage"));
    checks.push({
      check: `breaker of ${args.outageDependency} open during its outage (tick_breaker_state, tick_breakers_open, tick_breaker_opened_total)`,
      scenarios: "S11",
      expected: "state 2 or open breakers > 0 in a scrape during the outage; openings > 0",
      observed: `${open.length} of ${during.length} worker scrapes during the outage saw it open; ${opened} openings`,
      ok: open.length > 0 && opened > 0,
    });
  }

  // S10 and S3: a store cut shows as tick_store_up 0 while it lasts.
  for (const [name, store, scenarios] of [
    ["Redis unreachable", "redis", "S10"],
    ["Postgres unreachable", "database", "S3"],
  ] as const) {
    if (!phase(name)) {
      skipped(`tick_store_up{store="${store}"} 0 while ${name}`, scenarios, "");
      continue;
    }
    const during = inPhase(name, "during");
    const down = during.filter((s) => valuesOf(s, "tick_store_up", { store }).some((v) => v === 0));
    const endScrapes = scrapes.filter((s) => s.moment === "end");
    const upAtEnd = endScrapes.every((s) => valuesOf(s, "tick_store_up", { store }).every((v) => v === 1));
    checks.push({
      check: `${name}: tick_store_up{store="${store}"}`,
      scenarios,
      expected: "0 in scrapes during the cut; 1 everywhere at the end",
      observed: `0 in ${down.length} of ${during.length} scrapes (${[...new Set(down.map((s) => s.process))].join(", ") || "none"}); ${upAtEnd ? "all 1" : "not all 1"} at the end`,
      ok: down.length > 0 && upAtEnd,
    });
  }

  // S9: after a flush the due index is rebuilt; meanwhile shards poll Postgres.
  for (const name of ["Redis flushed", "Redis restarted empty"]) {
    if (!phase(name)) {
      skipped(`due index rebuilt after ${name}`, "S9", "");
      continue;
    }
    const rebuilds = counterDelta(scrapes, "scheduler", "tick_due_index_rebuilds_total", {}, ...window(name));
    const polling = counterDelta(scrapes, "scheduler", "tick_due_polling_rounds_total", {}, ...window(name));
    const modeZero = inPhase(name, "during").filter((s) => valuesOf(s, "tick_due_index_mode").some((v) => v === 0)).length;
    checks.push({
      check: `${name}: due index rebuilt (tick_due_index_rebuilds_total; tick_due_polling_rounds_total, tick_due_index_mode)`,
      scenarios: "S9",
      expected: "rebuilds > 0 in the phase",
      observed: `${rebuilds} rebuilds, ${polling} polling rounds, mode 0 in ${modeZero} scrapes`,
      ok: rebuilds > 0,
    });
  }

  // S13: a skewed process reports its skew (relative to the unskewed ones: the database clock may be injected).
  const skew = phase("clock skew within the margin");
  if (!skew) skipped("clock offset of the skewed processes", "S13", "");
  else checks.push(clockOffsetCheck(inPhase("clock skew within the margin")));
  return checks;
}

/**
 * S13: each skewed process reports its skew, relative to the unskewed ones (the database clock may be
 * injected). A process scraped before its store probe's first reading exports NaN (the CI run at 2b33426, when
 * the gauge started at 0, scraped scheduler-2 just after its skewed restart and read "+9782386.84 s"): such a
 * sample is not a reading, and a skewed process with none is not judged.
 */
export function clockOffsetCheck(list: Scrape[]): MetricCheck {
  const measured = (s: Scrape) => valuesOf(s, "tick_clock_offset_seconds").filter((v) => Number.isFinite(v));
  const base = median(list.filter((s) => s.skewMs === 0).flatMap(measured));
  const seen: string[] = [];
  let ok = false;
  let bad = false;
  for (const s of list.filter((x) => x.skewMs !== 0 && measured(x).length > 0)) {
    const rel = measured(s)[0]! - base;
    if (seen.length < 4) seen.push(`${s.process} ${rel >= 0 ? "+" : ""}${rel.toFixed(2)} s (skew ${s.skewMs / 1000} s)`);
    if (Math.abs(rel - s.skewMs / 1000) <= 0.5) ok = true;
    else bad = true;
  }
  return {
    check: "clock offset of the skewed processes (tick_clock_offset_seconds, relative to the unskewed ones)",
    scenarios: "S13",
    expected: "each skewed process's offset within 0.5 s of its skew",
    observed: seen.join("; ") || "no skewed process scraped",
    ok: ok && !bad,
  };
}

export function metricsTable(checks: MetricCheck[]): string {
  const head = ["metrics check", "scenarios", "expected", "observed", "ok"];
  const lines = checks.map((c) => [c.check, c.scenarios, c.expected, c.observed, c.ok ? "yes" : "NO"]);
  return markdownTable(head, lines);
}
