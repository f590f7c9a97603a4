/**
 * Named places where a fault test can make a process crash (after commit before publish, after
 * publish before mark, ...). Inert unless the test environment enables them with TICK_FAULT_POINTS.
 *
 * Spec: comma-separated `name` or `name:mode` or `name:mode:count`, where mode is `exit` (the process
 * kills itself with SIGKILL, like a power cut), `throw` (the current operation aborts, for in-process
 * tests) or `stop` (the process stops itself with SIGSTOP right there, and carries on from that line when
 * the test sends SIGCONT: a freeze at an exact point), and count is how many hits trigger (default 1; `*`
 * for every hit).
 */
export class FaultInjected extends Error {
  constructor(readonly point: string) {
    super(`fault injected at ${point}`);
    this.name = "FaultInjected";
  }
}

export interface FaultPoints {
  /** Call at the named place; does nothing unless that point is enabled. */
  hit(point: string): void;
  /** How often each enabled point has fired. */
  fired(): Record<string, number>;
}

interface Rule {
  mode: "exit" | "throw" | "stop";
  remaining: number;
}

export function parseFaultPoints(
  spec: string | undefined,
  onExit: () => never = () => process.kill(process.pid, "SIGKILL") as never,
  onStop: () => void = () => process.kill(process.pid, "SIGSTOP"),
): FaultPoints {
  const rules = new Map<string, Rule>();
  for (const entry of (spec ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const [name, mode = "throw", count = "1"] = entry.split(":");
    if (mode !== "exit" && mode !== "throw" && mode !== "stop") throw new Error(`fault point ${entry}: mode must be exit, throw or stop`);
    rules.set(name!, { mode, remaining: count === "*" ? Infinity : Number(count) });
  }
  const fired: Record<string, number> = {};
  return {
    hit(point) {
      const rule = rules.get(point);
      if (!rule || rule.remaining <= 0) return;
      rule.remaining -= 1;
      fired[point] = (fired[point] ?? 0) + 1;
      if (rule.mode === "exit") onExit();
      if (rule.mode === "stop") return onStop();
      throw new FaultInjected(point);
    },
    fired: () => ({ ...fired }),
  };
}

export const NO_FAULTS: FaultPoints = { hit: () => {}, fired: () => ({}) };
