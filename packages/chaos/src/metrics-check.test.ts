import { describe, expect, it } from "vitest";
import { checkLogs } from "./log-check.js";
import { counterDelta, parseMetrics, type Scrape } from "./metrics-check.js";

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
