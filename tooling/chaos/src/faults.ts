import { CLOCK_SKEW_MARGIN_MS, LEASE_TTL_MS, type Cluster, type Member, type Role } from "./cluster.js";
import type { Random } from "./random.js";
import type { ChaosSink } from "./sink.js";
import type { Workload } from "./workload.js";

export interface FaultContext {
  cluster: Cluster;
  sink: ChaosSink;
  workload: Workload;
  random: Random;
  log: (line: string) => void;
  /** Counts one injected fault of this phase. */
  injected: (what: string) => void;
  /** Scrapes a member's metrics right before the harness kills it (its counters die with it). */
  lastLook?: (m: Member) => Promise<void>;
}

export interface Phase {
  name: string;
  /** The seed document's scenarios this phase exercises. */
  scenarios: string;
  /**
   * How long the phase's fault keeps the product from working (a process down or frozen, a connection cut),
   * 0 for a fault that is over at once (a flush, a crash, terminated backends); null when the phase is not
   * one fault (load, mixed rounds), so its start lag is reported but not held to a bound.
   */
  faultMs: number | null;
  run(ctx: FaultContext, ms: number): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pickMember = (ctx: FaultContext, role: Role): Member => ctx.random.pick(ctx.cluster.byRole(role).filter((m) => ctx.cluster.alive(m) && !m.frozen));

/** SIGKILL one process of a role mid-work, start it again after a moment (S1 worker, S2 scheduler). */
const kill = (role: Role, downMs: number) => async (ctx: FaultContext, ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() + downMs + 1_000 < end) {
    await sleep(ctx.random.int(500, 1_500));
    const m = pickMember(ctx, role);
    await ctx.lastLook?.(m);
    ctx.log(`SIGKILL ${m.name}`);
    await ctx.cluster.kill(m);
    ctx.injected(`kill ${role}`);
    await sleep(downMs);
    await ctx.cluster.restart(m);
  }
};

/** SIGSTOP one process past its lease TTL, then SIGCONT: it wakes up believing it still owns its work (S7, S8). */
const freeze = (role: Role, frozenMs: number) => async (ctx: FaultContext, ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() + frozenMs + 1_000 < end) {
    await sleep(ctx.random.int(300, 1_000));
    const m = pickMember(ctx, role);
    ctx.log(`SIGSTOP ${m.name} for ${frozenMs} ms`);
    ctx.cluster.freeze(m);
    ctx.injected(`freeze ${role}`);
    await sleep(frozenMs);
    ctx.cluster.thaw(m);
  }
};

const cut = (which: "pgProxy" | "redisProxy", downMs: number) => async (ctx: FaultContext, ms: number) => {
  await sleep(Math.min(1_000, ms / 4));
  ctx.log(`cut ${which === "pgProxy" ? "Postgres" : "Redis"} for ${downMs} ms`);
  ctx.cluster[which].cut();
  ctx.injected(`cut ${which === "pgProxy" ? "postgres" : "redis"}`);
  await sleep(downMs);
  ctx.cluster[which].restore();
  await sleep(Math.max(0, ms - downMs - 1_000));
};

/** Restarts a member with fault points armed; whether or not it hits one, it runs clean afterwards. */
const crashAt = async (ctx: FaultContext, ms: number) => {
  const plan: [Role, string][] = [
    ["scheduler", "relay.after-publish-before-mark:exit"],
    ["scheduler", "dispatch.after-commit:exit"],
    ["worker", "worker.after-call-before-complete:exit"],
  ];
  const armed: Member[] = [];
  for (const [role, point] of plan) {
    const m = ctx.cluster.byRole(role).find((x) => !armed.some((a) => a.name === x.name) && ctx.cluster.alive(x) && !x.frozen) ?? pickMember(ctx, role);
    ctx.log(`arming ${point} on ${m.name}`);
    // Arming is a change of settings, not a fault: a graceful restart (a scheduler releases its shards). The
    // phase's faults are the crashes.
    armed.push(await ctx.cluster.restart(m, { TICK_FAULT_POINTS: point }, { graceful: true }));
  }
  // A crashed member is started again at once, clean, as a supervisor would: the fault is the crash, and
  // what it costs is recovery (leases lapsing, messages re-offered), not a process left down for the phase.
  const end = Date.now() + ms;
  const pending = new Set(armed);
  while (Date.now() < end) {
    for (const m of pending) {
      if (ctx.cluster.alive(m)) continue;
      pending.delete(m);
      ctx.log(`${m.name} crashed at its fault point; starting it again`);
      ctx.injected("crash at a fault point");
      await ctx.cluster.restart(m);
    }
    await sleep(200);
  }
  for (const m of pending) await ctx.cluster.restart(m);
};

/** A worker and a scheduler whose clocks are off by up to the documented margin, for the phase (S13). */
const skewClocks = async (ctx: FaultContext, ms: number) => {
  const skew = CLOCK_SKEW_MARGIN_MS - 200;
  const worker = pickMember(ctx, "worker");
  const scheduler = pickMember(ctx, "scheduler");
  ctx.log(`clock skew: ${worker.name} +${skew} ms, ${scheduler.name} -${skew} ms`);
  const skewedWorker = await ctx.cluster.restart(worker, { TICK_TEST_CLOCK_SKEW_MS: String(skew) });
  const skewedScheduler = await ctx.cluster.restart(scheduler, { TICK_TEST_CLOCK_SKEW_MS: String(-skew) });
  ctx.injected("skewed clock");
  ctx.injected("skewed clock");
  await sleep(ms);
  await ctx.cluster.restart(skewedWorker);
  await ctx.cluster.restart(skewedScheduler);
};

/** The tenants' dependency fails for a while, then recovers (S11); what died meanwhile is replayed (S17). */
const dependencyOutage = (downMs: number) => async (ctx: FaultContext, ms: number) => {
  ctx.log(`dependency down for ${downMs} ms`);
  ctx.sink.setDependencyDown(true);
  ctx.injected("dependency down");
  await sleep(downMs);
  ctx.sink.setDependencyDown(false);
  ctx.log("dependency recovered");
  await sleep(Math.max(0, ms - downMs));
};

export const PHASES: Phase[] = [
  { name: "baseline", scenarios: "-", faultMs: 0, run: async (_ctx, ms) => void (await sleep(ms)) },
  { name: "worker SIGKILL", scenarios: "S1 S6", faultMs: 1_500, run: kill("worker", 1_500) },
  { name: "worker frozen past its lease", scenarios: "S7", faultMs: 6_000, run: freeze("worker", 6_000) },
  { name: "scheduler SIGKILL", scenarios: "S2 S12", faultMs: 3_000, run: kill("scheduler", 3_000) },
  { name: "scheduler frozen past its lease", scenarios: "S8", faultMs: 5_000, run: freeze("scheduler", 5_000) },
  {
    name: "Redis flushed",
    scenarios: "S9",
    faultMs: 0,
    run: async (ctx, ms) => {
      await sleep(1_000);
      ctx.log("FLUSHALL");
      for (let tries = 0; ; tries++) {
        try {
          await ctx.cluster.adminRedis.flushall();
          break;
        } catch (err) {
          if (tries >= 20) throw err;
          await sleep(500); // Redis may be restarting (mixed rounds)
        }
      }
      ctx.injected("flush redis");
      await sleep(ms - 1_000);
    },
  },
  { name: "Redis unreachable", scenarios: "S10", faultMs: 5_000, run: cut("redisProxy", 5_000) },
  {
    name: "Redis restarted empty",
    scenarios: "S9 S10",
    faultMs: 2_000, // the restart itself
    run: async (ctx, ms) => {
      await sleep(1_000);
      ctx.log("restart redis-server (no persistence)");
      await ctx.cluster.restartRedis();
      ctx.injected("restart redis");
      await sleep(ms - 1_000);
    },
  },
  { name: "Postgres unreachable", scenarios: "S3 S4", faultMs: 5_000, run: cut("pgProxy", 5_000) },
  {
    name: "Postgres backends terminated",
    scenarios: "S3 S5",
    faultMs: 0,
    run: async (ctx, ms) => {
      for (let i = 0; i < 2; i++) {
        await sleep(ms / 3);
        const n = await ctx.cluster.terminateBackends();
        ctx.log(`terminated ${n} backends`);
        ctx.injected("terminate backends");
      }
      await sleep(ms / 3);
    },
  },
  // Both schedulers crash, seconds apart: a shard the survivor took over from the first (after one lease TTL) may
  // lapse again when it crashes in turn, so a job can wait for two shard leases where a single crash costs one.
  { name: "crashes at fault points", scenarios: "S4 S5 S6", faultMs: LEASE_TTL_MS, run: crashAt },
  { name: "clock skew within the margin", scenarios: "S13", faultMs: CLOCK_SKEW_MARGIN_MS, run: skewClocks },
  { name: "dependency outage", scenarios: "S11", faultMs: 6_000, run: dependencyOutage(6_000) },
  {
    name: "DLQ replay",
    scenarios: "S17",
    faultMs: 0,
    run: async (ctx, ms) => {
      const id = await ctx.workload.replayDeadDependencyJobs();
      if (id) ctx.injected("replay");
      await sleep(ms);
    },
  },
  {
    name: "noisy tenant burst",
    scenarios: "S16",
    faultMs: null, // load, not a fault: the quiet tenant's p99 bound judges it
    run: async (ctx, ms) => {
      const started = Date.now();
      await ctx.workload.burst(3_000);
      ctx.injected("burst of 3,000");
      await sleep(Math.max(0, ms - (Date.now() - started)));
    },
  },
];

/** Long runs: after the ordered phases, rounds of randomly chosen faults (same seed, same plan). */
export function mixedPhase(round: number): Phase {
  return {
    name: `mixed round ${round}`,
    scenarios: "mixed",
    faultMs: null,
    async run(ctx, ms) {
      const candidates = PHASES.filter((p) => p.name !== "baseline" && p.name !== "DLQ replay" && p.name !== "noisy tenant burst");
      const chosen = [ctx.random.pick(candidates), ctx.random.pick(candidates)];
      ctx.log(`mixed round ${round}: ${chosen.map((p) => p.name).join(" + ")}`);
      await Promise.all(chosen.map((p) => p.run(ctx, ms)));
      if (chosen.some((p) => p.name === "dependency outage")) {
        await ctx.workload.replayDeadDependencyJobs();
        ctx.injected("replay");
      }
      if (ctx.random.chance(0.3)) {
        await ctx.workload.burst(2_000);
        ctx.injected("burst of 2,000");
      }
    },
  };
}
