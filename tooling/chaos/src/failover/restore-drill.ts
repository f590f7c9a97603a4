import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Redis } from "ioredis";
import { migrateDeploy } from "@tick/db/migrate";
import { freePort, waitFor, type RunningProcess } from "@tick/testing";
import { startCluster, startRedisServer, type Cluster } from "../cluster.js";
import { chownTree, findPostgresBin, initPostgres, postgresOwner, runToEnd, startPostgres, type Owner, type PrivatePostgres } from "../private-postgres.js";
import type { Random } from "../random.js";
import { startChaosSink, type ChaosSink } from "../sink.js";
import { createTenant, type Op } from "../workload.js";
import { countOutcomes, fetchWithTimeout, startCreateLoad, type CreateLoad, type TryOutcome } from "./create-load.js";
import { fencingAcrossRestore } from "./fencing-across-restore.js";
import { drainJobs, missingJobs, withClient } from "./postgres-failover.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const STANZA = "tick";
const RESTORE_POINT = "drill";
/** Creates and runs between the base backup and the restore point T, and after T until everything stops. */
const BEFORE_T_MS = 5_000;
const AFTER_T_MS = 4_000;
/** How long the restored apps get to run a job before the drill counts the RTO as never. */
const RECOVERY_DEADLINE_MS = 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RestoreDrillReport {
  scenario: "restore";
  /** Whether the restore ran `tick restore fence` (false: --no-fence, the mechanism off). */
  fence: boolean;
  /** The full base backup (pgBackRest, under load), ms. */
  backupMs: number;
  archive: {
    /** From the WAL switch after T to its segment being in the archive (ms): the archive's lag. */
    switchToArchivedMs: number | null;
    /** WAL written into T's segment before T: what a loss at T, without the switch, would have lost (bytes). */
    walInOpenSegmentAtT: number;
    /** Segments still waiting for the archiver at T. */
    segmentsWaitingAtT: number;
    /** WAL written per second under the drill's load (bytes). */
    walBytesPerSecond: number;
  };
  acknowledged: { beforeT: number; aroundT: number; afterT: number };
  /** Acknowledged before T and not in the restored database: must be 0. */
  missingBeforeT: number;
  /** Acknowledged after T and not in the restored database: the RPO of restoring to T, reported. */
  lostAfterT: number;
  /** Of those, the ones the target had already run: the effect happened, the database no longer knows the job. */
  lostAfterTAlreadyRun: number;
  /** pgbackrest restore into a new data directory, then recovery until promoted at T (ms). */
  restoreMs: number;
  fenceMs: number | null;
  /** What `npm run tick -- restore fence` printed. */
  fenceOutput: string;
  /** From stopping everything to the first job run by the restored apps (ms). */
  rtoMs: number | null;
  jobsRestored: number;
  /** Jobs that had run (2xx at the target) before the restore and ran again after it: at-least-once across a restore. */
  ranAgain: number;
  effects: number;
  /** Keys whose effect came from two different jobs: must be 0. */
  duplicateEffects: number;
  /** Requests answered 2xx beyond the first per key: re-deliveries the target absorbed by the key. */
  rawRedeliveries: number;
  fencing: { checked: number; reused: number; backwards: number };
  /** The highest shard epoch before the stop, and the lowest issued by the restored database. */
  epochs: { highestBefore: string; lowestAfter: string | null };
  outcomes: Record<TryOutcome, number>;
  violations: string[];
}

/** pgBackRest from Debian's package; a missing one fails the drill by name. */
function findPgBackRest(): string {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/bin"])) {
    const file = path.join(dir, "pgbackrest");
    if (fs.existsSync(file)) return file;
  }
  throw new Error("pgbackrest not found: install the Debian package pgbackrest (apt-get install pgbackrest)");
}

/**
 * A pgBackRest repository and stanza of the drill's own (a config file in its directory, nothing in /etc), run as
 * the server's owner.
 */
function createPgBackRest(options: { bin: string; baseDir: string; owner: Owner | null; pgPort: number }) {
  const config = path.join(options.baseDir, "pgbackrest.conf");
  for (const dir of ["repo", "log", "lock", "spool"]) fs.mkdirSync(path.join(options.baseDir, dir), { recursive: true });
  fs.writeFileSync(
    config,
    [
      "[global]",
      `repo1-path=${path.join(options.baseDir, "repo")}`,
      "repo1-retention-full=1",
      `log-path=${path.join(options.baseDir, "log")}`,
      `lock-path=${path.join(options.baseDir, "lock")}`,
      `spool-path=${path.join(options.baseDir, "spool")}`,
      "log-level-console=warn",
      "log-level-file=info",
      "start-fast=y",
      "compress-type=lz4",
      "",
      `[${STANZA}]`,
      `pg1-path=${path.join(options.baseDir, "primary", "data")}`,
      `pg1-port=${options.pgPort}`,
      `pg1-socket-path=${options.baseDir}`,
      "",
    ].join("\n"),
  );
  chownTree(options.baseDir, options.owner);
  const base = [`--config=${config}`, `--stanza=${STANZA}`];
  return {
    /** archive_command for a server on `dataDir`. */
    archiveCommand: (dataDir: string) => `${options.bin} ${base.join(" ")} --pg1-path=${dataDir} archive-push %p`,
    run: (command: string, ...args: string[]) => runToEnd(options.bin, [...base, ...args, command], { owner: options.owner, cwd: options.baseDir }),
  };
}

/**
 * Settings of the drill's servers (-c options, taken literally: no quotes): WAL archived through pgBackRest; fsync
 * off (one host, no power loss to survive).
 */
const serverSettings = (archiveCommand: string) => ({
  wal_level: "replica",
  archive_mode: "on",
  archive_command: archiveCommand,
  fsync: "off",
  max_connections: 300,
});

/**
 * The backup and restore drill (docs/failover.md, "Restore from backup"): a private PostgreSQL archiving its WAL
 * with pgBackRest, the real console, scheduler and worker, and the chaos sink. Under a steady load of creates and
 * running jobs: a full base backup, a restore point T (every acknowledgement before it is noted), more load, then
 * everything stops. The backup is restored to T into a new data directory, the restore fence runs (`npm run tick
 * -- restore fence`; not with fence false), Redis is emptied, and the apps start on the restored database alone.
 * Once every job has finished: every create acknowledged before T has its job, those acknowledged after T are
 * counted as lost (the RPO of restoring to T), the target never saw a fencing token twice or going backwards,
 * and no key had two effects.
 */
export async function runRestoreDrill(options: { log: (line: string) => void; logDir: string; random: Random; fence?: boolean }): Promise<RestoreDrillReport> {
  const { log, random } = options;
  const useFence = options.fence ?? true;
  const pgBin = findPostgresBin();
  if (!pgBin) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql: install postgresql-15");
  const backrestBin = findPgBackRest();
  const owner = postgresOwner();
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-restore-drill-"));
  chownTree(baseDir, owner);
  const violations: string[] = [];
  let primary: PrivatePostgres | null = null;
  let restored: PrivatePostgres | null = null;
  let redisProc: RunningProcess | null = null;
  let cluster: Cluster | null = null;
  let sink: ChaosSink | null = null;
  let load: CreateLoad | null = null;
  try {
    const primaryData = path.join(baseDir, "primary", "data");
    const primaryPort = await freePort();
    const backrest = createPgBackRest({ bin: backrestBin, baseDir, owner, pgPort: primaryPort });
    await initPostgres(pgBin, primaryData, owner);
    primary = await startPostgres({ bin: pgBin, dataDir: primaryData, port: primaryPort, socketDir: baseDir, owner, settings: serverSettings(backrest.archiveCommand(primaryData)) });
    await withClient(primary.url("postgres"), (c) => c.query("CREATE DATABASE tick"));
    await migrateDeploy(primary.url("tick"));
    await backrest.run("stanza-create");
    log(`restore drill: PostgreSQL on :${primaryPort} archiving its WAL with pgBackRest (stanza ${STANZA}, repository ${path.join(baseDir, "repo")}); migrated`);

    const redisPort = await freePort();
    redisProc = await startRedisServer(redisPort);
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    sink = await startChaosSink(random.next);
    const database = (url: string) => ({ url, name: "tick", drop: async () => {} });
    cluster = await startCluster({ schedulers: 1, workers: 1, log, logDir: options.logDir, database: database(primary.url("tick")), redisUrl, namePrefix: "restore-" });
    const tenant = await createTenant(cluster.pool, cluster.consoleUrl, "restore-drill", { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 200 }, { fetch: fetchWithTimeout });
    load = startCreateLoad({ tenant, sink, random, intervalMs: 50, maxOutstanding: 400 });
    await sleep(1_000);

    // The base backup, under load.
    let started = Date.now();
    await backrest.run("backup", "--type=full");
    const backupMs = Date.now() - started;
    const walFrom = {
      lsn: await withClient(primary.url("postgres"), async (c) => (await c.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn")).rows[0]!.lsn),
      at: Date.now(),
    };
    log(`restore drill: full base backup in ${backupMs} ms; load goes on for ${BEFORE_T_MS} ms`);
    await sleep(BEFORE_T_MS);

    // The restore point T: acknowledgements that arrived before this call started must survive the restore.
    const tCallStart = Date.now();
    const point = await withClient(primary.url("postgres"), async (c) => {
      const { rows } = await c.query<{ lsn: string; segment: string; offset: number; waiting: number; bytes: string }>(
        `WITH p AS (SELECT pg_create_restore_point($1) AS lsn)
         SELECT p.lsn::text, (pg_walfile_name_offset(p.lsn)).file_name AS segment, (pg_walfile_name_offset(p.lsn)).file_offset AS offset,
                (SELECT count(*)::int FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') AS waiting, pg_wal_lsn_diff(p.lsn, $2::pg_lsn)::text AS bytes
           FROM p`,
        [RESTORE_POINT, walFrom.lsn],
      );
      return rows[0]!;
    });
    const tCallEnd = Date.now();
    const walBytesPerSecond = Math.round(Number(point.bytes) / ((tCallEnd - walFrom.at) / 1000));
    const switchedAt = Date.now();
    await withClient(primary.url("postgres"), (c) => c.query("SELECT pg_switch_wal()"));
    const archivedAt = await waitFor(
      () =>
        withClient(primary!.url("postgres"), async (c) => {
          const { rows } = await c.query<{ last: string | null; done: boolean }>(
            `SELECT last_archived_wal AS last, EXISTS (SELECT 1 FROM pg_ls_archive_statusdir() WHERE name = $1 || '.done') AS done FROM pg_stat_archiver`,
            [point.segment],
          );
          const last = rows[0]!.last ?? "";
          return rows[0]!.done || (last.length === 24 && last >= point.segment) ? Date.now() : null;
        }),
      { timeoutMs: 30_000, intervalMs: 25, description: `WAL segment ${point.segment} (restore point ${RESTORE_POINT}) in the archive` },
    ).catch((err: Error) => {
      violations.push(err.message);
      return null;
    });
    const switchToArchivedMs = archivedAt === null ? null : archivedAt - switchedAt;
    log(
      `restore drill: restore point "${RESTORE_POINT}" at ${point.lsn} (segment ${point.segment}, ${point.offset} bytes into it; ${point.waiting} segments waiting for the archiver); ` +
        `its segment archived ${switchToArchivedMs ?? "never"} ms after the switch; WAL under load ${walBytesPerSecond} bytes/s`,
    );
    await sleep(AFTER_T_MS);

    // Everything stops: the load (its creates answered), the apps, then PostgreSQL (immediate shutdown).
    await load.stop();
    const highestEpochBefore = await withClient(primary.url("tick"), async (c) => (await c.query<{ e: string }>("SELECT coalesce(max(epoch), 0)::text AS e FROM shard_leases")).rows[0]!.e);
    const stopAt = Date.now();
    await cluster.stop();
    cluster = null;
    await primary.stop("SIGQUIT");
    primary = null;
    log(`restore drill: apps and PostgreSQL stopped in ${Date.now() - stopAt} ms; restoring to "${RESTORE_POINT}" into a new data directory`);

    // Restore to T into a new data directory, and start PostgreSQL there: it replays the archive up to T and promotes.
    started = Date.now();
    const restoredData = path.join(baseDir, "restored", "data");
    fs.mkdirSync(restoredData, { recursive: true, mode: 0o700 });
    chownTree(path.dirname(restoredData), owner);
    await backrest.run("restore", `--pg1-path=${restoredData}`, "--type=name", `--target=${RESTORE_POINT}`, "--target-action=promote");
    restored = await startPostgres({
      bin: pgBin,
      dataDir: restoredData,
      port: await freePort(),
      socketDir: baseDir,
      owner,
      settings: serverSettings(backrest.archiveCommand(restoredData)),
      writable: true,
      timeoutMs: 60_000,
    });
    const restoreMs = Date.now() - started;
    const restoredUrl = restored.url("tick");
    log(`restore drill: restored and promoted at "${RESTORE_POINT}" in ${restoreMs} ms (:${restored.port})`);

    // The fence, as an operator runs it.
    let fenceMs: number | null = null;
    let fenceOutput = "";
    if (useFence) {
      started = Date.now();
      const fence = spawnSync(process.execPath, [path.join(root, "scripts/tick.mjs"), "restore", "fence"], { env: { ...process.env, DATABASE_URL: restoredUrl }, encoding: "utf8" });
      fenceMs = Date.now() - started;
      fenceOutput = `${fence.stdout}${fence.stderr}`.trim();
      log(`restore drill: npm run tick -- restore fence (${fenceMs} ms, exit ${fence.status}):\n${fenceOutput}`);
      if (fence.status !== 0) throw new Error(`tick restore fence failed (exit ${fence.status}): ${fenceOutput}`);
    } else {
      log("restore drill: NO restore fence (--no-fence: the mechanism off)");
    }
    // Redis holds nothing the restored database knows: emptied, the broker and due index start from Postgres alone.
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    await redis.flushall();
    const keysLeft = await redis.dbsize();
    redis.disconnect();
    if (keysLeft !== 0) violations.push(`Redis still holds ${keysLeft} keys after FLUSHALL`);

    const appsStartAt = Date.now();
    cluster = await startCluster({ schedulers: 1, workers: 1, log, logDir: options.logDir, database: database(restoredUrl), redisUrl, namePrefix: "restored-" });
    const firstRun = await waitFor(
      () => {
        const runs = sink!.deliveries.filter((d) => d.status === 200 && d.receivedAt >= appsStartAt).map((d) => d.receivedAt);
        return runs.length ? Math.min(...runs) : null;
      },
      { timeoutMs: RECOVERY_DEADLINE_MS, intervalMs: 50, description: "a job run by the restored apps" },
    ).catch(() => null);
    const rtoMs = firstRun === null ? null : firstRun - stopAt;
    log(`restore drill: apps started on the restored database ${appsStartAt - stopAt} ms after the stop; first job run ${rtoMs ?? "never"} ms after the stop`);
    if (rtoMs === null) violations.push(`the restored apps ran no job within ${RECOVERY_DEADLINE_MS / 1000} s`);
    await drainJobs(cluster.pool, log);

    const verdict = await judge({ pool: cluster.pool, sink, ops: load.ops, tCallStart, tCallEnd, stopAt, appsStartAt, highestEpochBefore });
    violations.push(...verdict.violations);
    const outcomes = countOutcomes(load.tries);
    for (const bad of ["bad_503", "server_error", "timeout", "other"] as const) if (outcomes[bad] > 0) violations.push(`${outcomes[bad]} creates answered ${bad}`);
    for (const m of cluster.members.values()) if (!cluster.alive(m)) violations.push(`${m.name} exited during the run`);
    return {
      scenario: "restore",
      fence: useFence,
      backupMs,
      archive: { switchToArchivedMs, walInOpenSegmentAtT: point.offset, segmentsWaitingAtT: point.waiting, walBytesPerSecond },
      restoreMs,
      fenceMs,
      fenceOutput,
      rtoMs,
      outcomes,
      ...verdict.figures,
      violations,
    };
  } finally {
    await load?.stop().catch(() => {});
    await cluster?.stop().catch((err: unknown) => log(`stopping the apps failed: ${String(err)}`));
    await sink?.close();
    for (const server of [primary, restored]) await server?.stop().catch(() => {});
    await redisProc?.stop(2_000);
    const backrestLogs = path.join(baseDir, "log");
    if (fs.existsSync(backrestLogs)) fs.cpSync(backrestLogs, path.join(options.logDir, "pgbackrest"), { recursive: true });
    fs.rmSync(baseDir, { recursive: true, force: true });
  }
}

/** The drill's checks on the restored database and the target's record, once everything has finished. */
async function judge(args: { pool: pg.Pool; sink: ChaosSink; ops: Op[]; tCallStart: number; tCallEnd: number; stopAt: number; appsStartAt: number; highestEpochBefore: string }) {
  const { pool, sink, ops } = args;
  const violations: string[] = [];
  const acked = ops.filter((o) => o.jobId && o.ackedAt !== undefined);
  const beforeT = acked.filter((o) => o.ackedAt! < args.tCallStart);
  const afterT = acked.filter((o) => o.ackedAt! > args.tCallEnd);
  const missingBefore = await missingJobs(pool, beforeT);
  for (const o of missingBefore.slice(0, 10)) violations.push(`${o.key} (job ${o.jobId}): acknowledged before the restore point, not in the restored database`);
  if (missingBefore.length > 10) violations.push(`... ${missingBefore.length} acknowledged before the restore point are missing in all`);
  const lostAfter = await missingJobs(pool, afterT);
  const ok = sink.deliveries.filter((d) => d.status === 200);
  const ranKeys = new Set(ok.map((d) => d.key));

  // Every job the restored database holds ran to success, its effect applied at the target.
  const { rows: jobs } = await pool.query<{ id: string; status: string; idempotency_key: string | null }>(`SELECT id, status::text, idempotency_key FROM history.jobs_all`);
  for (const j of jobs) {
    if (j.status !== "succeeded") violations.push(`job ${j.id} (${j.idempotency_key}) ended ${j.status}, expected succeeded`);
    else if (j.idempotency_key && !ranKeys.has(j.idempotency_key)) violations.push(`job ${j.id} (${j.idempotency_key}) succeeded without an effect at the target`);
  }
  // Effects by the job's downstream Idempotency-Key: two jobs behind one key would be two effects.
  const jobsOfKey = new Map<string, Set<string>>();
  for (const d of ok) jobsOfKey.set(d.key, (jobsOfKey.get(d.key) ?? new Set()).add(d.jobId));
  const duplicated = [...jobsOfKey].filter(([, ids]) => ids.size > 1);
  for (const [key, ids] of duplicated.slice(0, 10)) violations.push(`${key}: effects from ${ids.size} jobs (${[...ids].join(", ")})`);
  const ranBefore = new Set(ok.filter((d) => d.receivedAt < args.stopAt).map((d) => d.key));
  const ranAgain = new Set(ok.filter((d) => d.receivedAt >= args.appsStartAt && ranBefore.has(d.key)).map((d) => d.key));

  const fencing = fencingAcrossRestore(sink.deliveries, args.appsStartAt);
  for (const v of fencing.reused.slice(0, 10)) violations.push(`fencing token reused across the restore: ${v}`);
  for (const v of fencing.backwards.slice(0, 10)) violations.push(`fencing token not above the ones seen before the restore: ${v}`);
  if (fencing.reused.length + fencing.backwards.length > 10) violations.push(`... ${fencing.reused.length} reused and ${fencing.backwards.length} backward fencing tokens in all`);

  // Shard epochs: every one the restored database issued is above the highest the schedulers held before the stop.
  const { rows: epochs } = await pool.query<{ lowest: string | null }>(
    `SELECT least((SELECT min(epoch) FROM shard_leases WHERE holder IS NOT NULL),
                  (SELECT min(shard_epoch) FROM history.attempts_all WHERE claimed_at >= to_timestamp($1 / 1000.0)))::text AS lowest`,
    [args.appsStartAt],
  );
  const lowestAfter = epochs[0]!.lowest;
  if (lowestAfter !== null && BigInt(lowestAfter) <= BigInt(args.highestEpochBefore)) {
    violations.push(`shard epoch ${lowestAfter} issued after the restore, not above ${args.highestEpochBefore} held before it`);
  }
  return {
    violations,
    figures: {
      acknowledged: { beforeT: beforeT.length, aroundT: acked.length - beforeT.length - afterT.length, afterT: afterT.length },
      missingBeforeT: missingBefore.length,
      lostAfterT: lostAfter.length,
      lostAfterTAlreadyRun: lostAfter.filter((o) => ranKeys.has(o.key)).length,
      jobsRestored: jobs.length,
      ranAgain: ranAgain.size,
      effects: sink.effects.size,
      duplicateEffects: duplicated.length,
      rawRedeliveries: ok.length - ranKeys.size,
      fencing: { checked: fencing.checked, reused: fencing.reused.length, backwards: fencing.backwards.length },
      epochs: { highestBefore: args.highestEpochBefore, lowestAfter },
    },
  };
}
