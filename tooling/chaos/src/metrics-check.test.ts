import { describe, expect, it } from "vitest";
import { checkLogs } from "./log-check.js";
import { clockOffsetCheck, counterDelta, parseMetrics, type Scrape } from "./metrics-check.js";

describe("parseMetrics", () => {
  it("reads tick_ series with labels, escapes and infinities, and skips the rest", () => {
    const text = [
      "# HELP tick_attempts_completed_total Attempts completed",
      "# TYPE tick_attempts_completed_total counter",
      'tick_attempts_completed_total{status="succeeded",app="worker"} 12',
      'tick_attempts_completed_total{status="dead",app="worker"} 3',
      'tick_scheduling_lag_seconds_bucket{le="+Inf",tenant="a\\"b",queue="default"} 7',
      "tick_shards_held 4",
      "process_cpu_seconds_total 1.5",
    ].join("\n");
    expect(parseMetrics(text)).toEqual([
      { name: "tick_attempts_completed_total", labels: { status: "succeeded", app: "worker" }, value: 12 },
      { name: "tick_attempts_completed_total", labels: { status: "dead", app: "worker" }, value: 3 },
      { name: "tick_scheduling_lag_seconds_bucket", labels: { le: "+Inf", tenant: 'a"b', queue: "default" }, value: 7 },
      { name: "tick_shards_held", labels: {}, value: 4 },
    ]);
  });
});

describe("counterDelta", () => {
  const scrape = (incarnation: number, at: number, value: number): Scrape => ({
    process: "scheduler-1",
    role: "scheduler",
    incarnation,
    id: "scheduler-1",
    skewMs: 0,
    phase: "p",
    moment: "m",
    at,
    samples: [{ name: "tick_x_total", labels: { kind: "takeover" }, value }],
  });

  it("sums each incarnation's growth; one started inside the window counts from 0", () => {
    // Incarnation 1: 5 before the window, 8 at its last scrape (then killed); incarnation 2 starts inside: 3.
    const scrapes = [scrape(1, 100, 5), scrape(1, 300, 8), scrape(2, 400, 1), scrape(2, 500, 3), scrape(2, 900, 10)];
    expect(counterDelta(scrapes, "scheduler", "tick_x_total", { kind: "takeover" }, 200, 600)).toBe(3 + 3);
    expect(counterDelta(scrapes, "scheduler", "tick_x_total", { kind: "free" }, 200, 600)).toBe(0);
  });
});

describe("checkLogs", () => {
  const secrets = [{ what: "an API key", value: "tick_live_secret123" }];

  it("finds a secret anywhere in a line, and job lines without their tenant or attempt lines without shard and epoch", () => {
    const outputs = [
      {
        process: "worker-1.1",
        text: [
          JSON.stringify({ msg: "attempt completed", tenantId: "t", jobId: "j", attemptId: "a", shard: 1, epoch: "4" }),
          JSON.stringify({ msg: "webhook delivery failed", jobId: "j" }),
          JSON.stringify({ msg: "attempt lease expired", tenantId: "t", jobId: "j", attemptId: "a" }),
          "plain text with tick_live_secret123 in it",
        ].join("\n"),
      },
    ];
    const verdict = checkLogs(outputs, secrets);
    expect(verdict.lines).toBe(4);
    expect(verdict.jobLines).toBe(3);
    expect(verdict.violations).toHaveLength(3);
    expect(verdict.violations[0]).toMatch(/an API key in a log line/);
    expect(verdict.violations[1]).toMatch(/"webhook delivery failed" lacks tenantId/);
    expect(verdict.violations[2]).toMatch(/"attempt lease expired" lacks shard, epoch/);
  });

  it("passes clean lines", () => {
    expect(checkLogs([{ process: "scheduler-1", text: JSON.stringify({ msg: "shard lease acquired", shard: 2, epoch: "9" }) }], secrets).violations).toEqual([]);
  });
});

describe("clockOffsetCheck", () => {
  // The database clock is injected ~113 days ahead: every process's measured offset is about -9,782,390 s.
  const DB = -9_782_390;
  const scrape = (process: string, skewMs: number, offset: number): Scrape => ({
    process,
    role: process.startsWith("worker") ? "worker" : "scheduler",
    incarnation: 1,
    id: process,
    skewMs,
    phase: "clock skew within the margin",
    moment: "during",
    at: 0,
    samples: [{ name: "tick_clock_offset_seconds", labels: {}, value: offset }],
  });

  it("judges each skewed process's offset relative to the unskewed ones", () => {
    const good = clockOffsetCheck([scrape("worker-1", 0, DB), scrape("scheduler-1", 0, DB + 0.01), scrape("worker-2", 1_800, DB + 1.8), scrape("scheduler-2", -1_800, DB - 1.79)]);
    expect(good.ok).toBe(true);
    const off = clockOffsetCheck([scrape("worker-1", 0, DB), scrape("worker-2", 1_800, DB + 4)]);
    expect(off.ok).toBe(false);
    expect(off.observed).toContain("worker-2 +4.00 s (skew 1.8 s)");
  });

  it("does not take a process's gauge before its first reading (NaN) for an offset, skewed or not", () => {
    const check = clockOffsetCheck([
      scrape("worker-1", 0, DB),
      scrape("worker-3", 0, Number.NaN),
      scrape("scheduler-1", 0, Number.NaN),
      scrape("scheduler-2", -1_800, Number.NaN),
      scrape("scheduler-2", -1_800, DB - 1.8),
      scrape("worker-2", 1_800, DB + 1.8),
    ]);
    expect(check.ok).toBe(true);
    expect(check.observed).not.toContain("9782");
    // Nothing measured from any skewed process: not a pass.
    expect(clockOffsetCheck([scrape("worker-1", 0, DB), scrape("worker-2", 1_800, Number.NaN)]).ok).toBe(false);
  });
});
