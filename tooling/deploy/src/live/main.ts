import { createHmac, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { freePort } from "@tick/testing";
import { REPO } from "../paths.js";
import { docker, ensureEngine, run, type Log } from "./docker.js";
import { ensureStandins } from "./standins.js";

// node tooling/deploy/dist/live/main.js [--json file] [--keep] [--build-only | --skip-build]
// The deployment for real (docs/deployment.md, "Tested"): builds infra/docker/Dockerfile, checks the image,
// runs infra/compose.yaml unchanged (plus a test override: a sink container, the network's address range and
// where sign-up mails go) and smoke-tests it through the published console port: sign-up, a job against the
// sink with its signed webhook, a schedule firing, a scheduler killed and its shards taken over, `down` and `up`
// keeping every job, and a clean stop (exit 0 on SIGTERM). The Docker engine is started when it does not answer;
// the official base images are used when present, stand-ins (tooling/deploy/standins) are built once otherwise.
// --keep leaves the stack running for a look (then: docker compose -p tick-deploy-test down -v). --build-only
// stops after the image's checks; --skip-build runs the stack on the image such a run built (npm test builds
// beside lint, whose ESLint leaves a core free, and runs the stack on its own later).
// Prints a table; exits 1 when a check failed.

const PROJECT = "tick-deploy-test";
const IMAGE = "tick:deploy-test";
const SHARDS = 16;
const LEASE_TTL_MS = 15_000; // SCHEDULER_LEASE_TTL's default, which compose.yaml keeps
const RENEW_MS = 5_000; // SCHEDULER_LEASE_RENEW_INTERVAL's default
const APP_SERVICES = ["console", "scheduler-1", "scheduler-2", "worker-1", "worker-2"];
const HEALTHY_SERVICES = ["postgres", "redis", ...APP_SERVICES];

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const started = Date.now();
const log: Log = (line) => process.stdout.write(`[deploy ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Check {
  name: string;
  ok: boolean;
  figure: string;
}
const checks: Check[] = [];
function check(name: string, ok: boolean, figure: string) {
  checks.push({ name, ok, figure });
  log(`${ok ? "ok" : "FAILED"}: ${name} (${figure})`);
}

/** Polls until `probe` returns a value (not undefined) or the time is up; null on timeout. */
async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 500): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  let lastLog = Date.now();
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) return null;
    if (Date.now() - lastLog > 10_000) {
      log(`  still waiting for ${what}`);
      lastLog = Date.now();
    }
    await sleep(everyMs);
  }
}

/** A /24 in 172.30.0.0/16 that no Docker network of this engine uses, for the stack's network. */
async function freeSubnet(): Promise<string> {
  const ids = (await docker(["network", "ls", "-q"])).stdout.split("\n").filter(Boolean);
  const used = new Set<string>();
  if (ids.length) {
    const r = await docker(["network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", ...ids]);
    for (const s of r.stdout.split(/\s+/)) if (s) used.add(s);
  }
  for (let i = 200; i < 255; i++) if (![...used].some((s) => s.startsWith(`172.30.${i}.`) || s.startsWith("172.30.0.0/16"))) return `172.30.${i}.0/24`;
  throw new Error("no free 172.30.x.0/24 for the test network");
}

/**
 * The sink: records every request (path, headers, body) and answers 200; GET /records lists them. It runs in the
 * Tick image (it has Node), inside the stack's network, published on the host's loopback only.
 */
const SINK = `
const http = require("node:http");
const records = [];
http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    if (req.method === "GET" && req.url === "/records") { res.setHeader("content-type", "application/json"); return res.end(JSON.stringify(records)); }
    records.push({ path: req.url, method: req.method, headers: req.headers, body, at: Date.now() });
    res.end("ok");
  });
}).listen(8080, "0.0.0.0");
process.on("SIGTERM", () => process.exit(0));
`;

interface SinkRecord {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

class Stack {
  readonly dir: string;
  readonly envFile: string;
  readonly overrideFile: string;
  constructor(
    private readonly composeCmd: string[],
    readonly consolePort: number,
    readonly sinkPort: number,
    subnet: string,
  ) {
    this.dir = path.join(REPO, ".data", "deploy");
    fs.mkdirSync(this.dir, { recursive: true });
    this.envFile = path.join(this.dir, "compose.env");
    this.overrideFile = path.join(this.dir, "compose.test.yaml");
    const env = {
      TICK_IMAGE: IMAGE,
      POSTGRES_PASSWORD: randomBytes(12).toString("hex"),
      NEXTAUTH_SECRET: randomBytes(32).toString("base64"),
      NEXTAUTH_URL: `http://127.0.0.1:${consolePort}`,
      TICK_CONSOLE_PORT: String(consolePort),
      TICK_SIGNUP: "open",
      TICK_MAIL_DIR: "/tmp/tick-mail",
      // Jobs may reach the sink, on the stack's own network, and nothing else that is not public.
      TICK_SSRF_ALLOWED_CIDRS: subnet,
      LOG_LEVEL: "info",
    };
    fs.writeFileSync(this.envFile, Object.entries(env).map(([k, v]) => `${k}=${v}`).join("\n") + "\n", { mode: 0o600 });
    // The test's additions to infra/compose.yaml, which it runs unchanged: the sink and a fixed address range.
    fs.writeFileSync(
      this.overrideFile,
      [
        "services:",
        "  sink:",
        "    image: ${TICK_IMAGE}",
        `    command: ["node", "-e", ${JSON.stringify(SINK.trim())}]`,
        "    ports:",
        `      - "127.0.0.1:${sinkPort}:8080"`,
        "networks:",
        "  default:",
        "    ipam:",
        "      config:",
        `        - subnet: ${subnet}`,
        "",
      ].join("\n"),
    );
  }

  compose(args: string[], options: { check?: boolean; onLine?: (l: string) => void } = {}) {
    const [cmd, ...pre] = this.composeCmd;
    return run(cmd!, [...pre, "-p", PROJECT, "--env-file", this.envFile, "-f", path.join(REPO, "infra/compose.yaml"), "-f", this.overrideFile, ...args], options);
  }

  /** The container ID of a service (its current one). */
  async container(service: string): Promise<string> {
    const id = (await this.compose(["ps", "-a", "-q", service])).stdout.trim().split("\n")[0];
    if (!id) throw new Error(`no container for ${service}`);
    return id;
  }

  async state(service: string): Promise<{ status: string; health: string | null; exitCode: number }> {
    const id = await this.container(service);
    const r = await docker(["inspect", "--format", "{{json .State}}", id]);
    const s = JSON.parse(r.stdout) as { Status: string; ExitCode: number; Health?: { Status: string } };
    return { status: s.Status, health: s.Health?.Status ?? null, exitCode: s.ExitCode };
  }

  async sql(query: string): Promise<string> {
    const r = await this.compose(["exec", "-T", "postgres", "psql", "-U", "tick", "-d", "tick", "-Atc", query]);
    return r.stdout.trim();
  }

  /** Waits until the migration completed and every long-running service is healthy; ms taken, or null. */
  async waitHealthy(timeoutMs: number): Promise<number | null> {
    const t0 = Date.now();
    const ok = await waitFor("every service healthy", timeoutMs, async () => {
      const migrate = await this.state("migrate");
      if (migrate.status === "exited" && migrate.exitCode !== 0) throw new Error(`migrate exited ${migrate.exitCode}`);
      if (migrate.status !== "exited") return undefined;
      for (const s of HEALTHY_SERVICES) if ((await this.state(s)).health !== "healthy") return undefined;
      return true;
    }, 1_000);
    return ok ? Date.now() - t0 : null;
  }

  async logs(service: string): Promise<string> {
    return (await this.compose(["logs", "--no-color", "--tail", "40", service], { check: false })).stdout;
  }
}

async function api(base: string, key: string | null, method: string, pathname: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}/api/v1${pathname}`, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the error message
  }
  return { status: res.status, json };
}

function expectStatus(r: { status: number; json: unknown }, status: number, what: string) {
  if (r.status !== status) throw new Error(`${what}: HTTP ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
  return r.json as Record<string, unknown>;
}

async function sinkRecords(port: number): Promise<SinkRecord[]> {
  const res = await fetch(`http://127.0.0.1:${port}/records`, { signal: AbortSignal.timeout(5_000) });
  return (await res.json()) as SinkRecord[];
}

/** Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body"> under the whsec_ secret's bytes. */
function webhookSignatureValid(record: SinkRecord, secrets: string[]): boolean {
  const id = record.headers["webhook-id"];
  const ts = record.headers["webhook-timestamp"];
  const given = (record.headers["webhook-signature"] ?? "").split(" ");
  return secrets.some((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
    const expected = `v1,${createHmac("sha256", key).update(`${id}.${ts}.${record.body}`).digest("base64")}`;
    return given.includes(expected);
  });
}

async function buildImage(): Promise<void> {
  log(`building ${IMAGE} from infra/docker/Dockerfile (the first build on a machine takes a few minutes; later ones reuse the dependency layer)`);
  const t0 = Date.now();
  let steps = 0;
  const r = await docker(["build", "--force-rm", "-f", "infra/docker/Dockerfile", "-t", IMAGE, "."], {
    cwd: REPO,
    check: false,
    onLine: (line) => {
      if (/^Step \d+\/\d+ : (RUN|FROM)/.test(line)) log(`  ${line.slice(0, 140)}`);
      if (/^Step /.test(line)) steps += 1;
    },
  });
  const ms = Date.now() - t0;
  check("docker build -f infra/docker/Dockerfile", r.code === 0, r.code === 0 ? `${(ms / 1000).toFixed(0)} s, ${steps} steps` : `exit ${r.code}: ${r.stdout.split("\n").slice(-12).join(" | ")}`);
  if (r.code !== 0) throw new Error("the image did not build");
}

async function inspectImage(): Promise<void> {
  const [info] = JSON.parse((await docker(["image", "inspect", IMAGE])).stdout) as { Size: number; Config: { User: string } }[];
  if (!info) throw new Error(`no image ${IMAGE}`);
  const mb = info.Size / 1e6;
  log(`image ${IMAGE}: ${mb.toFixed(0)} MB, user ${info.Config.User}`);
  // What the final stage must not hold: history, local data, build caches, development dependencies, tooling.
  const absent = [".git", ".data", ".turbo", ".env", "tooling", "e2e", "apps/console/.next/cache", "node_modules/vitest", "node_modules/@playwright/test", "node_modules/eslint", "node_modules/turbo", "node_modules/typescript", "node_modules/knip"];
  const present = ["apps/console/.next/BUILD_ID", "apps/scheduler/dist/main.js", "apps/worker/dist/main.js", "packages/db/dist/index.js", "node_modules/next", "node_modules/prisma", "prisma/migrations"];
  const script = [
    "id -u",
    ...absent.map((p) => `[ -e '${p}' ] && echo "unexpected ${p}"`),
    ...present.map((p) => `[ -e '${p}' ] || echo "missing ${p}"`),
    "du -sm /app | cut -f1",
    "true",
  ].join("; ");
  const r = await docker(["run", "--rm", "--entrypoint", "sh", IMAGE, "-c", script]);
  const lines = r.stdout.trim().split("\n");
  const uid = lines[0];
  const problems = lines.filter((l) => l.startsWith("unexpected") || l.startsWith("missing"));
  check("image runs as a non-root user", info.Config.User === "node" && uid === "1000", `USER ${info.Config.User}, uid ${uid}`);
  check("image holds the built apps and production dependencies only", problems.length === 0, problems.length ? problems.join(", ") : `${mb.toFixed(0)} MB (/app ${lines.at(-1)} MB); no .git, .data, build cache, tooling or dev dependencies`);
}

async function smoke(stack: Stack) {
  const base = `http://127.0.0.1:${stack.consolePort}`;
  // Sign-up: the link is mailed (here: a JSON file in the console container); confirming it creates the tenant.
  const email = `owner-${randomBytes(3).toString("hex")}@example.com`;
  const password = `Deploy-test-${randomBytes(9).toString("base64url")}`;
  expectStatus(await api(base, null, "POST", "/signup", { tenantName: "Deploy test", email, password }), 202, "POST /signup");
  const mail = await waitFor("the sign-up mail", 15_000, async () => {
    const r = await stack.compose(["exec", "-T", "console", "sh", "-c", "cat /tmp/tick-mail/*.json 2>/dev/null"], { check: false });
    const token = /#token=([A-Za-z0-9_-]+)/.exec(r.stdout)?.[1];
    return token;
  });
  if (!mail) throw new Error("no sign-up mail in the console's TICK_MAIL_DIR");
  const verified = expectStatus(await api(base, null, "POST", "/signup/verify", { token: mail }), 201, "POST /signup/verify");
  const key = (verified.firstKey as { key: string }).key;
  check("sign-up through the published console port", typeof key === "string" && key.length > 20, `tenant created, first API key issued (${email})`);

  const secrets = JSON.stringify(expectStatus(await api(base, key, "GET", "/webhooks/secrets"), 200, "GET /webhooks/secrets")).match(/whsec_[A-Za-z0-9+/=]+/g) ?? [];

  // A job against the sink, with a completion webhook to it.
  const t0 = Date.now();
  const job = expectStatus(
    await api(base, key, "POST", "/jobs", { target: { method: "POST", url: "http://sink:8080/job", body: '{"hello":"deploy"}' }, callbackUrl: "http://sink:8080/webhook", metadata: { test: "deploy" } }),
    201,
    "POST /jobs",
  );
  const jobId = job.id as string;
  const done = await waitFor("the job to succeed", 30_000, async () => {
    const j = expectStatus(await api(base, key, "GET", `/jobs/${jobId}`), 200, "GET /jobs/{id}");
    if (j.status === "dead" || j.status === "expired") throw new Error(`job ${jobId} is ${j.status}`);
    return j.status === "succeeded" ? Date.now() - t0 : undefined;
  });
  const delivered = (await sinkRecords(stack.sinkPort)).find((r) => r.path === "/job" && r.headers["tick-job-id"] === jobId);
  check("a job runs against the sink container", done !== null && delivered !== undefined, done !== null ? `succeeded in ${done} ms; the sink saw it with fencing token ${delivered?.headers["tick-fencing-token"] ?? "none"}` : "not succeeded within 30 s");
  const webhook = await waitFor("the completion webhook", 20_000, async () => (await sinkRecords(stack.sinkPort)).find((r) => r.path === "/webhook" && r.body.includes(jobId)));
  check("its signed completion webhook arrives", webhook !== null && webhookSignatureValid(webhook, secrets), webhook ? `job.succeeded, signature ${webhookSignatureValid(webhook, secrets) ? "valid" : "INVALID"} under the tenant's secret` : "no webhook within 20 s");

  // A schedule every 2 seconds (6-field cron, seconds first).
  const schedule = expectStatus(
    await api(base, key, "POST", "/schedules", { name: "deploy-smoke", cron: "*/2 * * * * *", timezone: "UTC", job: { target: { method: "POST", url: "http://sink:8080/schedule" } } }),
    201,
    "POST /schedules",
  );
  const fired = await waitFor("the schedule to fire twice", 30_000, async () => {
    const n = (await sinkRecords(stack.sinkPort)).filter((r) => r.path === "/schedule").length;
    return n >= 2 ? n : undefined;
  });
  check("a schedule fires", fired !== null, fired !== null ? `${fired} occurrences reached the sink` : "fewer than 2 occurrences within 30 s");
  return { base, key, scheduleId: schedule.id as string };
}

async function killScheduler(stack: Stack) {
  const holders = async () => {
    const rows = await stack.sql("SELECT coalesce(holder, '-') || ' ' || (expires_at > now())::text FROM shard_leases ORDER BY shard");
    return rows.split("\n").filter(Boolean).map((l) => l.split(" ") as [string, string]);
  };
  const before = await holders();
  const held = (id: string, rows: [string, string][]) => rows.filter(([h, live]) => h === id && live === "true").length;
  log(`shards before the kill: scheduler-1 ${held("scheduler-1", before)}, scheduler-2 ${held("scheduler-2", before)} of ${SHARDS}`);
  const t0 = Date.now();
  await stack.compose(["kill", "scheduler-1"]); // SIGKILL: no release of its leases
  const tookOver = await waitFor("scheduler-2 to hold every shard", LEASE_TTL_MS + RENEW_MS + 20_000, async () => (held("scheduler-2", await holders()) === SHARDS ? Date.now() - t0 : undefined), 250);
  const bound = LEASE_TTL_MS + RENEW_MS + 5_000;
  check(
    "docker compose kill scheduler-1: scheduler-2 takes over its shards",
    tookOver !== null && tookOver <= bound,
    tookOver !== null ? `all ${SHARDS} shards held by scheduler-2 ${tookOver} ms after the kill (bound: lease TTL ${LEASE_TTL_MS / 1000} s + renew interval ${RENEW_MS / 1000} s + 5 s)` : "not within the bound",
  );
  // The schedule keeps firing from scheduler-2.
  const t1 = Date.now();
  const after = await waitFor("an occurrence after the takeover", 15_000, async () => ((await sinkRecords(stack.sinkPort)).some((r) => r.path === "/schedule" && r.at > t1) ? true : undefined));
  check("the schedule fires after the takeover", after !== null, after ? "yes" : "no occurrence within 15 s");
  const killed = await stack.state("scheduler-1");
  log(`scheduler-1 after the kill: ${killed.status} (exit ${killed.exitCode}); started again for what follows`);
  await stack.compose(["start", "scheduler-1"]);
}

async function downAndUp(stack: Stack, base: string, key: string) {
  const count = async () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = expectStatus(await api(base, key, "GET", `/jobs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`), 200, "GET /jobs") as { data: { id: string }[]; nextCursor: string | null };
      ids.push(...page.data.map((j) => j.id));
      cursor = page.nextCursor;
    } while (cursor);
    return ids.sort();
  };
  // Stop the schedule's new occurrences first, so the count before and after compares the same set.
  const schedules = expectStatus(await api(base, key, "GET", "/schedules"), 200, "GET /schedules") as { data: { id: string }[] };
  for (const s of schedules.data) expectStatus(await api(base, key, "POST", `/schedules/${s.id}/pause`), 200, "POST /schedules/{id}/pause");
  await sleep(1_000);
  const before = await count();
  log(`docker compose down (volumes kept), then up: ${before.length} jobs before`);
  const t0 = Date.now();
  await stack.compose(["down"]);
  await stack.compose(["up", "-d"]);
  const healthy = await stack.waitHealthy(180_000);
  const after = healthy !== null ? await count() : [];
  const kept = before.every((id) => after.includes(id));
  check("down and up again keep every job (Postgres volume)", healthy !== null && kept && after.length === before.length, `${after.length} of ${before.length} jobs after up; every service healthy again ${((Date.now() - t0) / 1000).toFixed(0)} s after down`);
}

async function cleanStop(stack: Stack) {
  log("docker compose stop (SIGTERM; Postgres: SIGINT, its image's stop signal)");
  const t0 = Date.now();
  await stack.compose(["stop"]);
  const codes: string[] = [];
  let clean = true;
  for (const s of [...HEALTHY_SERVICES, "migrate"]) {
    const st = await stack.state(s);
    codes.push(`${s} ${st.exitCode}`);
    if (st.status !== "exited" || st.exitCode !== 0) clean = false;
  }
  check("the stack stops cleanly", clean, `exit codes: ${codes.join(", ")} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

function printTable(total: number) {
  const rows = checks.map((c) => `| ${c.ok ? "ok" : "FAILED"} | ${c.name} | ${c.figure.replace(/\|/g, "\\|")} |`);
  process.stdout.write(`\nDeployment test (image, compose stack, smoke test), ${(total / 1000).toFixed(0)} s:\n| result | check | figure |\n|---|---|---|\n${rows.join("\n")}\n\n`);
}

async function main() {
  const keep = process.argv.includes("--keep");
  const buildOnly = process.argv.includes("--build-only");
  const skipBuild = process.argv.includes("--skip-build");
  const engine = await ensureEngine(log, path.join(REPO, ".data", "deploy"));
  let stack: Stack | null = null;
  try {
    if (skipBuild) {
      if ((await docker(["image", "inspect", IMAGE], { check: false })).code !== 0) throw new Error(`--skip-build: no image ${IMAGE} (run with --build-only first)`);
    } else {
      const standins = await ensureStandins(log);
      log(`base images: ${standins.map((s) => `${s.image} (${s.source}${s.source === "built stand-in" ? `, ${(s.ms / 1000).toFixed(0)} s` : ""})`).join(", ")}`);
      await buildImage();
      await inspectImage();
    }
    if (buildOnly) return;

    stack = new Stack(engine.compose, await freePort(), await freePort(), await freeSubnet());
    const running = stack;
    // Stopped early (npm test's cleanup, Ctrl-C): the stack is taken down before exiting.
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        log(`${signal}: docker compose down -v`);
        void running.compose(["down", "-v", "--remove-orphans"], { check: false }).finally(() => process.exit(130));
      });
    }
    await stack.compose(["down", "-v", "--remove-orphans"], { check: false }); // a previous run's leftovers
    log(`docker compose up -d (project ${PROJECT}, console on 127.0.0.1:${stack.consolePort})`);
    await stack.compose(["up", "-d"]);
    const healthy = await stack.waitHealthy(180_000);
    check("docker compose up: migrations complete, every service healthy", healthy !== null, healthy !== null ? `${(healthy / 1000).toFixed(0)} s (postgres, redis, console, 2 schedulers, 2 workers)` : "not within 180 s");
    if (healthy === null) {
      for (const s of [...HEALTHY_SERVICES, "migrate"]) process.stdout.write(`--- ${s}\n${await stack.logs(s)}\n`);
      throw new Error("the stack did not become healthy");
    }
    const { base, key } = await smoke(stack);
    await killScheduler(stack);
    await downAndUp(stack, base, key);
    await cleanStop(stack);
  } catch (err) {
    check("the deployment test ran to its end", false, (err as Error).message.split("\n")[0]!.slice(0, 300));
  } finally {
    if (stack && !keep) await stack.compose(["down", "-v", "--remove-orphans"], { check: false });
    if (!keep) await engine.stop();
  }
}

async function report() {
  const json = arg("json");
  const total = Date.now() - started;
  printTable(total);
  if (json) fs.writeFileSync(json, JSON.stringify({ checks, totalMs: total }, null, 2));
  process.exit(checks.every((c) => c.ok) ? 0 : 1);
}

await main();
await report();
