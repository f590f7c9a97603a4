import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { testServerUrl } from "@tick/db/testing";
import { testRedisUrl } from "@tick/testing";
import { Redis } from "ioredis";
import pg from "pg";
import { apiIngest } from "./api-ingest.js";
import { recurrenceScale } from "./recurrence-scale.js";
import { scaleOut } from "./scale-out.js";
import { burnDown, catchUp, fairness, history, precision, scale, type Context } from "./scenarios.js";
import { capAccuracy, debounce, keyClaimLatency, keyFairness, rateAccuracy } from "./flow-keys.js";
import { startBenchSink } from "./sink.js";
import { judge, renderTables, type BenchReport } from "./report.js";

// npm run bench [-- --quick] [--only burn-down,precision,fairness,catch-up,scale,history,recurrence,api-ingest,scale-out,key-fairness,key-cap,key-rate,debounce,key-claim] [--jobs N]
//                 [--concurrency C] [--rounds R] [--json file] [--systems http-client,tick,graphile-worker,pg-boss,bullmq]
//                 (BENCH_CPU_PROF=dir profiles Tick's processes; BENCH_CPU_BREAKDOWN=1 prints CPU per job by process)
// Prints a table per scenario, one JSON object per scenario (lines starting with {"scenario":...}), and
// the benchmark's targets met, not met or not run (also in the report as `targets`).

const SCENARIOS = ["burn-down", "precision", "fairness", "catch-up", "scale", "history", "recurrence", "api-ingest", "scale-out", "key-fairness", "key-cap", "key-rate", "debounce", "key-claim"] as const;
type Scenario = (typeof SCENARIOS)[number];

function parseArgs(argv: string[]) {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const quick = argv.includes("--quick");
  const only = (get("only")?.split(",").map((s) => s.trim()) ?? [...SCENARIOS]) as Scenario[];
  for (const s of only) if (!SCENARIOS.includes(s)) throw new Error(`--only: unknown scenario "${s}" (${SCENARIOS.join(", ")})`);
  return {
    quick,
    only,
    jobs: Number(get("jobs") ?? (quick ? 3_000 : 10_000)),
    concurrency: Number(get("concurrency") ?? 50),
    /** Burn-down rounds (each system once per round; the median round counts). */
    rounds: Number(get("rounds") ?? (quick ? 1 : 3)),
    json: get("json"),
    /** Burn-down only these systems (http-client, tick, graphile-worker, pg-boss, bullmq). */
    systems: get("systems")?.split(",").map((s) => s.trim()),
  };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const started = Date.now();
const log = (line: string) => process.stdout.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);

async function machineFacts() {
  const client = new pg.Client({ connectionString: testServerUrl() });
  await client.connect();
  const settings = await client.query<{ name: string; setting: string }>(
    `SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'shared_buffers', 'synchronous_commit', 'fsync', 'max_connections', 'autovacuum')`,
  );
  await client.end();
  const redis = new Redis(testRedisUrl());
  const info = await redis.info("server");
  redis.disconnect();
  const version = (pkg: string) => (JSON.parse(fs.readFileSync(path.join(root, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    postgres: Object.fromEntries(settings.rows.map((r) => [r.name, r.setting])),
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown",
    peers: { "graphile-worker": version("graphile-worker"), "pg-boss": version("pg-boss"), bullmq: version("bullmq") },
    commit: (() => {
      try {
        return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
      } catch {
        return "unknown";
      }
    })(),
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const machine = await machineFacts();
  log(`${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}, Postgres ${machine.postgres.server_version} (autovacuum ${machine.postgres.autovacuum}), Redis ${machine.redis}`);
  const sink = await startBenchSink();
  const ctx: Context = { sink, log, quick: args.quick };
  const report: BenchReport = { machine, quick: args.quick, startedAt: new Date(started).toISOString(), scenarios: {} };
  const emit = (scenario: string, result: unknown) => process.stdout.write(`${JSON.stringify({ scenario, machine: { cpus: machine.cpus, commit: machine.commit }, result })}\n`);
  try {
    if (args.only.includes("burn-down")) {
      report.scenarios.burnDown = await burnDown(ctx, args.jobs, args.concurrency, args.systems as Parameters<typeof burnDown>[3], args.rounds);
      emit("burn-down", report.scenarios.burnDown);
    }
    if (args.only.includes("precision")) {
      report.scenarios.precision = await precision(ctx, [100, 500, 2_000], args.quick ? 3 : 5);
      emit("precision", report.scenarios.precision);
    }
    if (args.only.includes("fairness")) {
      report.scenarios.fairness = await fairness(ctx, args.quick ? 10_000 : 50_000, 5);
      emit("fairness", report.scenarios.fairness);
    }
    if (args.only.includes("catch-up")) {
      // A cap below what the machine can run, so the cap is what shapes the release.
      report.scenarios.catchUp = await catchUp(ctx, args.quick ? 2_000 : 6_000, 200);
      emit("catch-up", report.scenarios.catchUp);
    }
    if (args.only.includes("scale")) {
      report.scenarios.scale = await scale(ctx, args.quick ? [10_000, 100_000] : [10_000, 1_000_000], args.quick ? 1_000 : 5_000);
      emit("scale", report.scenarios.scale);
    }
    if (args.only.includes("history")) {
      report.scenarios.history = await history(ctx, args.quick ? [0, 200_000] : [0, 2_000_000], args.quick ? 1_000 : 5_000);
      emit("history", report.scenarios.history);
    }
    if (args.only.includes("recurrence")) {
      report.scenarios.recurrence = await recurrenceScale(ctx, args.quick ? 10_000 : 100_000);
      emit("recurrence", report.scenarios.recurrence);
    }
    if (args.only.includes("api-ingest")) {
      report.scenarios.apiIngest = await apiIngest(ctx, args.quick ? { singleRequests: 1_000, pacedSeconds: 5, batches: 5 } : { singleRequests: 4_000, pacedSeconds: 10, batches: 20 });
      emit("api-ingest", report.scenarios.apiIngest);
    }
    if (args.only.includes("scale-out")) {
      report.scenarios.scaleOut = await scaleOut(ctx, args.quick ? 2_000 : 6_000);
      emit("scale-out", report.scenarios.scaleOut);
    }
    if (args.only.includes("key-fairness")) {
      report.scenarios.keyFairness = await keyFairness(ctx, args.quick ? 10_000 : 50_000, 100, 5);
      emit("key-fairness", report.scenarios.keyFairness);
    }
    if (args.only.includes("key-cap")) {
      report.scenarios.keyCap = await capAccuracy(ctx, args.quick ? 100 : 1_000, 10);
      emit("key-cap", report.scenarios.keyCap);
    }
    if (args.only.includes("key-rate")) {
      report.scenarios.keyRate = await rateAccuracy(ctx, 100, args.quick ? 10 : 60);
      emit("key-rate", report.scenarios.keyRate);
    }
    if (args.only.includes("debounce")) {
      report.scenarios.debounce = await debounce(ctx, args.quick ? 10_000 : 100_000, args.quick ? 100 : 1_000);
      emit("debounce", report.scenarios.debounce);
    }
    if (args.only.includes("key-claim")) {
      report.scenarios.keyClaim = await keyClaimLatency(ctx, args.quick ? 10_000 : 100_000, args.quick ? 100_000 : 1_000_000);
      emit("key-claim", report.scenarios.keyClaim);
    }
  } finally {
    await sink.close();
  }
  report.targets = judge(report);
  process.stdout.write(`\n${renderTables(report)}\n`);
  const out = args.json ?? path.join(root, ".data/bench/latest.json");
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  log(`report written to ${path.relative(process.cwd(), out)}`);
}

void main().then(
  () => process.exit(0),
  (err) => {
    log(`FAILED: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
