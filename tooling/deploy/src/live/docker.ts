import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/** Writes one line of progress (the deploy test's own prefix and clock). */
export type Log = (line: string) => void;

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to the command's stdin, then closed. */
  input?: string | Buffer;
  cwd?: string;
  /** The command's environment; this process's when absent. */
  env?: NodeJS.ProcessEnv;
  /** Each line of output is passed here as it arrives (long builds show progress). */
  onLine?: (line: string) => void;
  /** Rejects on a non-zero exit (the default); false resolves with the code. */
  check?: boolean;
}

/** Runs a command to completion, collecting its output. */
export function run(cmd: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const lines = (chunk: string, carry: { rest: string }) => {
      if (!options.onLine) return;
      const parts = (carry.rest + chunk).split("\n");
      carry.rest = parts.pop() ?? "";
      for (const line of parts) if (line.trim() !== "") options.onLine(line);
    };
    const outCarry = { rest: "" };
    const errCarry = { rest: "" };
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      lines(c, outCarry);
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
      lines(c, errCarry);
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const result = { code: code ?? (signal ? 128 : 1), stdout, stderr };
      if (options.check !== false && result.code !== 0) {
        const tail = (stderr.trim() || stdout.trim()).split("\n").slice(-15).join("\n");
        reject(new Error(`${cmd} ${args.join(" ")} exited ${result.code}:\n${tail}`));
      } else resolve(result);
    });
    child.stdin.on("error", () => {}); // a command that exits without reading its input
    child.stdin.end(options.input ?? "");
  });
}

/** The docker CLI. */
export function docker(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return run("docker", args, options);
}

function commandExists(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
}

async function engineAnswers(): Promise<boolean> {
  const r = await docker(["info", "--format", "{{.ServerVersion}}"], { check: false }).catch(() => ({ code: 1 }));
  return r.code === 0;
}

export interface Engine {
  /** Stops the engine if this process started it (its images stay cached in its data root). */
  stop(): Promise<void>;
  /** The Compose command: `docker compose` (plugin) or `docker-compose` (Debian's package). */
  compose: string[];
}

/**
 * A Docker engine that answers: the running one, or `dockerd` started here (it needs root; CI installs
 * Debian's docker.io). Its data root is the default one, so images built once stay for the next run.
 */
export async function ensureEngine(log: Log, logDir: string): Promise<Engine> {
  if (!commandExists("docker")) throw new Error("no docker CLI: install Debian's docker.io (apt-get install docker.io)");
  let stop = async () => {};
  if (!(await engineAnswers())) {
    if (!commandExists("dockerd")) throw new Error("the Docker engine does not answer and there is no dockerd: install Debian's docker.io");
    fs.mkdirSync(logDir, { recursive: true });
    const logFile = path.join(logDir, "dockerd.log");
    log(`starting dockerd (log ${logFile})`);
    const out = fs.openSync(logFile, "a");
    const daemon = spawn("dockerd", [], { detached: true, stdio: ["ignore", out, out] });
    daemon.unref();
    const deadline = Date.now() + 60_000;
    while (!(await engineAnswers())) {
      if (daemon.exitCode !== null) throw new Error(`dockerd exited ${daemon.exitCode}: see ${logFile}`);
      if (Date.now() > deadline) throw new Error(`dockerd did not answer within 60 s: see ${logFile}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    stop = async () => {
      log("stopping the dockerd this test started");
      daemon.kill("SIGTERM");
      const until = Date.now() + 30_000;
      while (daemon.exitCode === null && daemon.signalCode === null && Date.now() < until) await new Promise((r) => setTimeout(r, 250));
    };
  }
  const plugin = await docker(["compose", "version"], { check: false }).catch(() => ({ code: 1 }));
  const compose = plugin.code === 0 ? ["docker", "compose"] : commandExists("docker-compose") ? ["docker-compose"] : null;
  if (!compose) throw new Error("no Docker Compose: install Debian's docker-compose (or the compose plugin)");
  const version = await docker(["version", "--format", "{{.Server.Version}}"]);
  log(`Docker engine ${version.stdout.trim()}, compose: ${compose.join(" ")}`);
  return { stop, compose };
}

/** An image's labels, or null when the engine has no image of that name. */
export async function imageLabels(name: string): Promise<Record<string, string> | null> {
  const r = await docker(["image", "inspect", "--format", "{{json .Config.Labels}}", name], { check: false });
  if (r.code !== 0) return null;
  return (JSON.parse(r.stdout.trim() || "null") as Record<string, string> | null) ?? {};
}
