import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";

export interface RunningProcess {
  child: ChildProcess;
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code once the process is gone. */
  stop(graceMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

/** Starts a process whose output is captured; tests must call stop() in a finally/afterAll. */
export function startProcess(command: string, args: string[], options: SpawnOptions = {}): RunningProcess {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
  let output = "";
  child.stdout?.on("data", (d) => (output += d));
  child.stderr?.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    child.once("exit", (code) => resolve(code));
  });
  return {
    child,
    output: () => output,
    exited,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
  };
}
