import { machineCpuMs, until, withTick, type Context } from "./scenarios.js";
import type { TickTenant } from "./tick.js";

// Scale-out: the same burn-down with 1, 2 and 4 scheduler processes and 1, 2 and 4 worker
// processes on this machine. On 2 cores the rate flattens; the point is that nothing is lost or run twice, the
// shards spread evenly over the schedulers, and adding processes does not collapse the rate (contention).

export interface ScaleOutResult {
  schedulers: number;
  workers: number;
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  machineCpuMsPerJob: number;
  /** Shards each scheduler held once the leases settled, before the jobs were created (16 in all). */
  shardsPerScheduler: number[];
  /** Attempts started beyond one per job: a duplicate claim or a re-run (must be 0: the sink answers 200). */
  extraStarts: number;
  /** Calls the sink received beyond one per job. */
  duplicateCalls: number;
  /** Jobs that did not end succeeded. */
  notSucceeded: number;
}

const SCALE_OUT_SIZES: readonly (readonly [number, number])[] = [1, 2, 4].flatMap((s) => [1, 2, 4].map((w) => [s, w] as const));

export async function scaleOut(ctx: Context, jobs: number, sizes = SCALE_OUT_SIZES): Promise<ScaleOutResult[]> {
  const results: ScaleOutResult[] = [];
  for (const [schedulers, workers] of sizes) {
    results.push(
      await withTick(
        async (cluster) => {
          ctx.log(`scale-out: ${schedulers} scheduler(s), ${workers} worker(s), ${jobs} jobs over 16 tenants (one per shard)`);
          for (let i = 0; i < schedulers; i++) await cluster.startScheduler();
          for (let i = 0; i < workers; i++) await cluster.startWorker();
          const spread = async () =>
            (
              await cluster.pool.query<{ holder: string; n: number }>(
                `SELECT holder, count(*)::int AS n FROM shard_leases WHERE holder IS NOT NULL AND expires_at > now() GROUP BY holder ORDER BY holder`,
              )
            ).rows;
          // Settled: every shard held, by every scheduler, none more than one above another.
          await until(ctx, "shard leases settling", async () => {
            const rows = await spread();
            const counts = rows.map((r) => r.n);
            const ok = rows.length === schedulers && counts.reduce((a, b) => a + b, 0) === cluster.shards && Math.max(...counts) - Math.min(...counts) <= 1;
            return { ok, progress: rows.map((r) => `${r.holder} ${r.n}`).join(", ") || "none held" };
          }, 120_000);
          const shardsPerScheduler = (await spread()).map((r) => r.n);
          const tenants: TickTenant[] = [];
          for (let shard = 0; shard < cluster.shards; shard++) tenants.push(await cluster.createTenant({ shard, maxInFlight: 10_000 }));
          ctx.sink.reset();
          const cpuBefore = await machineCpuMs();
          const started = performance.now();
          const per = Math.ceil(jobs / tenants.length);
          await Promise.all(
            tenants.map((t, ti) => cluster.createJobs(t, Array.from({ length: per }, (_, i) => ({ key: `so-${schedulers}-${workers}-${ti}-${i}`, url: ctx.sink.url })))),
          );
          const total = per * tenants.length;
          await until(ctx, "scale-out burn-down", async () => {
            const delivered = ctx.sink.distinct();
            if (delivered < total) return { ok: false, progress: `${delivered} of ${total} delivered` };
            const left = (await cluster.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE status IN ('scheduled', 'dispatched', 'running')`)).rows[0]!.n;
            return { ok: left === 0, progress: `${left} not finished` };
          }, 600_000);
          const seconds = (performance.now() - started) / 1000;
          const machineCpuMsPerJob = Math.round((((await machineCpuMs()) - cpuBefore) / total) * 1000) / 1000;
          const { rows } = await cluster.pool.query<{ started: number; succeeded: number }>(
            `SELECT (SELECT count(*)::int FROM history.attempts_all WHERE started_at IS NOT NULL) AS started,
                    (SELECT count(*)::int FROM history.jobs_all WHERE status = 'succeeded') AS succeeded`,
          );
          const r: ScaleOutResult = {
            schedulers,
            workers,
            jobs: total,
            seconds: Math.round(seconds * 100) / 100,
            jobsPerSecond: Math.round(total / seconds),
            machineCpuMsPerJob,
            shardsPerScheduler,
            extraStarts: rows[0]!.started - total,
            duplicateCalls: ctx.sink.received() - ctx.sink.distinct(),
            notSucceeded: total - rows[0]!.succeeded,
          };
          ctx.log(
            `  ${r.jobsPerSecond} jobs/s (${r.seconds} s); shards ${r.shardsPerScheduler.join("/")}; extra starts ${r.extraStarts}, duplicate calls ${r.duplicateCalls}, not succeeded ${r.notSucceeded}`,
          );
          return r;
        },
        { SCHEDULER_DISPATCH_RATE: "1000000" },
      ),
    );
  }
  return results;
}
