import { round } from "./cost.js";
import { databaseNow, withTick, type Context } from "./scenarios.js";
import type { TickTenant } from "./tick.js";

/** Twenty zones: whole, half and three-quarter hour offsets, both hemispheres' summer time rules. */
const ZONES = [
  "UTC",
  "Europe/London",
  "Europe/Paris",
  "Europe/Helsinki",
  "Europe/Moscow",
  "Africa/Johannesburg",
  "Asia/Dubai",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Asia/Shanghai",
  "Asia/Tokyo",
  "Australia/Adelaide",
  "Australia/Sydney",
  "Pacific/Auckland",
  "Pacific/Honolulu",
  "America/Sao_Paulo",
  "America/New_York",
  "America/Chicago",
  "America/Denver",
  "America/Los_Angeles",
] as const;
const KINDS = ["minute", "hourly", "daily"] as const;
/** The scheduler's lookahead, set here so the window below knows when occurrences became due for it. */
const LOOKAHEAD_MS = 2_000;

interface RecurrenceRound {
  /** Offset of the occurrence instant from the first one ("T", "T+60s"). */
  dueAt: string;
  /** Schedules with an occurrence at that instant. */
  due: number;
  /** Jobs created for that instant. */
  created: number;
  /** From the moment the scheduler could take them (due − lookahead) to the last one taken (database clock). */
  seconds: number;
  perSecond: number;
  /** Occurrence jobs created after their own due time. */
  lateJobs: number;
  /** Schedules still not taken for this instant when the time budget ran out (0 when the burst got through). */
  notTaken: number;
}

export interface RecurrenceResult {
  schedules: number;
  zones: number;
  rounds: RecurrenceRound[];
  /** Over both instants: expected occurrences with no job, occurrences with more than one, jobs for no expected occurrence. */
  missing: number;
  duplicate: number;
  extra: number;
}

/** Local second, minute and hour of `at` in `zone`. */
function localTime(at: Date, zone: string): { s: number; m: number; h: number } {
  const parts = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "numeric", minute: "numeric", second: "numeric", hourCycle: "h23" }).formatToParts(at);
  const part = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return { s: part("second"), m: part("minute"), h: part("hour") };
}

/** Six-field crons (seconds first) that all fire at `at`: every minute, hourly and daily, in `zone`'s local time. */
function cronsFiringAt(at: Date, zone: string): Record<(typeof KINDS)[number], string> {
  const { s, m, h } = localTime(at, zone);
  return { minute: `${s} * * * * *`, hourly: `${s} ${m} * * * *`, daily: `${s} ${m} ${h} * * *` };
}

/**
 * Recurrence at scale: `n` schedules (a third every minute, a third hourly, a third daily, spread over 20
 * zones and 100 tenants) inserted with SQL, all with an occurrence at one instant T a few seconds ahead,
 * and one scheduler (no worker). Measured: how fast the scheduler turns the T burst into jobs, then the
 * every-minute schedules' burst at T+60s; then every expected occurrence of both instants has exactly one
 * job, and no job exists for an occurrence that was not due.
 */
export async function recurrenceScale(ctx: Context, n: number): Promise<RecurrenceResult> {
  return withTick(
    async (cluster) => {
      const tenants: TickTenant[] = [];
      for (let i = 0; i < 100; i++) tenants.push(await cluster.createTenant({ maxInFlight: 1_000 }));
      await cluster.startScheduler();
      // T: far enough ahead that the insert commits before the scheduler may take the occurrences.
      const t = new Date(Math.ceil(((await databaseNow(cluster.pool)) + 4_000 + n / 25) / 1000) * 1000);
      const combos = ZONES.flatMap((zone) => KINDS.map((kind) => ({ zone, kind, cron: cronsFiringAt(t, zone)[kind] })));
      ctx.log(`recurrence: ${n.toLocaleString("en")} schedules (${KINDS.join(", ")}; ${ZONES.length} zones; 100 tenants), all firing at ${t.toISOString()}`);
      const template = { target: { method: "POST", url: ctx.sink.url, headers: {}, body: "{}" } };
      await cluster.pool.query(
        `INSERT INTO schedules (id, tenant_id, queue_id, shard, name, cron, timezone, job_template, next_fire_at, updated_at)
         SELECT gen_random_uuid(), t.id, t.queue_id, t.shard, k.kind || '-' || g, k.cron, k.zone, $7::jsonb, $8, now()
           FROM generate_series(0, $9::int - 1) g
           JOIN unnest($1::uuid[], $2::uuid[], $3::int[]) WITH ORDINALITY AS t(id, queue_id, shard, i) ON t.i = 1 + g % 100
           JOIN unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS k(kind, zone, cron, i) ON k.i = 1 + (g / 100) % $10::int`,
        [
          tenants.map((x) => x.id),
          tenants.map((x) => x.queueId),
          tenants.map((x) => x.shard),
          combos.map((c) => c.kind),
          combos.map((c) => c.zone),
          combos.map((c) => c.cron),
          JSON.stringify(template),
          t,
          n,
          combos.length,
        ],
      );
      const committed = await databaseNow(cluster.pool);
      if (committed > t.getTime() - LOOKAHEAD_MS) ctx.log(`  the insert committed ${committed - (t.getTime() - LOOKAHEAD_MS)} ms after the occurrences became due for the scheduler`);
      const minuteSchedules = (await cluster.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM schedules WHERE name LIKE 'minute-%'`)).rows[0]!.n;

      /**
       * Waits until no schedule is left with a fire time at or before `dueAt` (each was taken: it made its
       * job, or its misfire policy skipped it), or until `budgetMs` after `from`: a slow materialiser is
       * measured, not waited for without end. What was not taken by then counts as missed below.
       */
      const round_ = async (label: string, dueAt: Date, due: number, from: number, budgetMs: number): Promise<{ round: RecurrenceRound; doneAt: number }> => {
        let doneAt = 0;
        let pending = 0;
        let lastLog = Date.now();
        // Polled every 100 ms by probing each shard's due index (the scheduler's own); the count, which reads every
        // schedule left (24 ms a call at 100,000, a fifth of a core at this pace), only for the progress line.
        const count = async () =>
          (await cluster.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM schedules WHERE NOT paused AND next_fire_at <= $1`, [dueAt])).rows[0]!.n;
        for (;;) {
          const { rows } = await cluster.pool.query<{ now: Date; left: boolean }>(
            `SELECT now() AS now, EXISTS (
               SELECT 1 FROM (SELECT DISTINCT shard FROM tenants) t
                WHERE EXISTS (SELECT 1 FROM schedules s WHERE s.shard = t.shard AND NOT s.paused AND s.next_fire_at IS NOT NULL AND s.next_fire_at <= $1)
             ) AS left`,
            [dueAt],
          );
          doneAt = rows[0]!.now.getTime();
          if (!rows[0]!.left) break;
          if (doneAt > from + budgetMs) {
            pending = await count();
            ctx.log(`  ${label}: ${pending} schedules still not taken ${budgetMs / 1000} s after they were due; stopped waiting`);
            break;
          }
          if (Date.now() - lastLog > 5_000) {
            ctx.log(`  recurrence ${label}: ${await count()} schedules not yet taken`);
            lastLog = Date.now();
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        const { rows } = await cluster.pool.query<{ created: number; late: number }>(
          `SELECT count(*)::int AS created, count(*) FILTER (WHERE created_at > due_at)::int AS late FROM history.jobs_all WHERE occurrence_at = $1`,
          [dueAt],
        );
        const seconds = Math.max(0.001, (doneAt - from) / 1000);
        const r: RecurrenceRound = { dueAt: label, due, created: rows[0]!.created, seconds: round(seconds), perSecond: Math.round(rows[0]!.created / seconds), lateJobs: rows[0]!.late, notTaken: pending };
        ctx.log(`  ${label}: ${r.created.toLocaleString("en")} of ${due.toLocaleString("en")} occurrences in ${r.seconds} s (${r.perSecond}/s), ${r.lateJobs} created after due`);
        return { round: r, doneAt };
      };
      const budgetMs = Math.max(60_000, n / 0.25);
      const first = await round_("T", t, n, Math.max(committed, t.getTime() - LOOKAHEAD_MS), budgetMs);
      // The every-minute schedules again; timed from when the first burst was through if that came later.
      const next = new Date(t.getTime() + 60_000);
      const second = await round_("T+60s", next, minuteSchedules, Math.max(first.doneAt, next.getTime() - LOOKAHEAD_MS), budgetMs);

      const { rows } = await cluster.pool.query<{ missing: number; duplicate: number; extra: number }>(
        `WITH expected AS (
           SELECT id, $1::timestamptz AS at FROM schedules
           UNION ALL SELECT id, $2::timestamptz FROM schedules WHERE name LIKE 'minute-%'
         ), got AS (
           SELECT schedule_id AS id, occurrence_at AS at, count(*)::int AS n FROM history.jobs_all
            WHERE schedule_id IS NOT NULL AND occurrence_at <= $2 GROUP BY 1, 2
         )
         SELECT (SELECT count(*)::int FROM expected e LEFT JOIN got g USING (id, at) WHERE g.id IS NULL) AS missing,
                (SELECT count(*)::int FROM got WHERE n > 1) AS duplicate,
                (SELECT count(*)::int FROM got g LEFT JOIN expected e USING (id, at) WHERE e.id IS NULL) AS extra`,
        [t, next],
      );
      const check = rows[0]!;
      ctx.log(`  missed ${check.missing}, duplicate ${check.duplicate}, extra ${check.extra}`);
      return { schedules: n, zones: ZONES.length, rounds: [first.round, second.round], ...check };
    },
    { SCHEDULER_RECURRENCE_LOOKAHEAD: `${LOOKAHEAD_MS}ms` },
  );
}
