import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { alertTests, INCIDENTS, type AlertRule } from "./alert-matrix.js";
import { REPO } from "./paths.js";
import { documentedMetrics, isExported, readPromql } from "./promql.js";

const DIR = path.join(REPO, "infra/prometheus");

interface RecordingRule {
  record: string;
  expr: string;
}
interface AlertingRule extends AlertRule {
  expr: string;
  for?: string;
}
interface RuleFile<R> {
  groups: { name: string; rules: R[] }[];
}

const RULES = path.join(DIR, "alerts.yaml");
const rules = (parse(fs.readFileSync(RULES, "utf8")) as RuleFile<RecordingRule | AlertingRule>).groups.flatMap((g) => g.rules);
const recording = rules.filter((r): r is RecordingRule => "record" in r);
const alerting = rules.filter((r): r is AlertingRule => "alert" in r);

/**
 * promtool's unit tests of the rules, written from the incident matrix (alert-matrix.ts) for this run: the
 * matrix is the source, the YAML (about a megabyte of series) is not kept in the repository. When promtool
 * fails, the file is left where the failure message says, to read or to run again (promtool test rules <path>).
 */
const TEST_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "tick-alert-tests-"));
const TEST_FILE = path.join(TEST_DIR, "alerts.test.yaml");
fs.writeFileSync(TEST_FILE, alertTests(alerting, [RULES]));
let keepTestFile = false;
afterAll(() => {
  if (!keepTestFile) fs.rmSync(TEST_DIR, { recursive: true, force: true });
});

/** promtool (Debian's prometheus package; .ci/run installs it), run in infra/prometheus. */
function promtool(...args: string[]): { ok: boolean; output: string } {
  const run = spawnSync("promtool", args, { cwd: DIR, encoding: "utf8", maxBuffer: 64 << 20 });
  if (run.error) throw new Error(`promtool did not run (Debian: apt-get install prometheus): ${run.error.message}`);
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}

/** The anchor GitHub gives a Markdown heading. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

describe("infra/prometheus: alerting and recording rules", () => {
  it("promtool check rules: the rules are valid", () => {
    const { ok, output } = promtool("check", "rules", RULES);
    expect(ok, output).toBe(true);
  });

  it("promtool test rules: each incident fires its alerts and leaves every other alert silent", { timeout: 300_000 }, () => {
    const { ok, output } = promtool("test", "rules", TEST_FILE);
    keepTestFile = !ok;
    expect(ok, `${output}\n(the tests: ${TEST_FILE})`).toBe(true);
  });

  it("the matrix covers every alert: each fires in some incident, and is checked silent in all the others", () => {
    const names = alerting.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(INCIDENTS.some((i) => i.fires.some((f) => f.alert === name)), `an incident fires ${name}`).toBe(true);
    const tests = (parse(fs.readFileSync(TEST_FILE, "utf8")) as { tests: { name: string; alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests;
    expect(tests.map((t) => t.name)).toEqual(INCIDENTS.map((i) => i.name));
    for (const [n, test] of tests.entries()) {
      const fires = new Set(INCIDENTS[n]!.fires.map((f) => f.alert));
      for (const name of names) {
        const checks = test.alert_rule_test.filter((c) => c.alertname === name);
        if (fires.has(name)) expect(checks.some((c) => c.exp_alerts.length > 0), `${test.name}: ${name} fires`).toBe(true);
        else expect(checks.length > 0 && checks.every((c) => c.exp_alerts.length === 0), `${test.name}: ${name} stays silent`).toBe(true);
      }
    }
  });

  it("every expression parses and uses only metrics the processes export, or recording rules defined before it", () => {
    const documented = documentedMetrics();
    // A rule reads the recordings of the same evaluation only if they come before it in the group.
    const recorded = new Set<string>();
    for (const rule of rules) {
      const name = "record" in rule ? rule.record : rule.alert;
      const { errors, metrics } = readPromql(rule.expr);
      expect(errors, `${name}: ${rule.expr}`).toEqual([]);
      expect(metrics.length, name).toBeGreaterThan(0);
      for (const metric of metrics) {
        if (metric.includes(":")) expect(recorded.has(metric), `${name} uses ${metric}, recorded before it`).toBe(true);
        else expect(isExported(metric, documented), `${name} uses ${metric}, which the processes export (docs/observability.md)`).toBe(true);
      }
      if ("record" in rule) recorded.add(rule.record);
    }
    expect(recording.length).toBeGreaterThan(10);
  });

  it("every alert names its incident and links its runbook section in docs/operations.md", () => {
    const operations = fs.readFileSync(path.join(REPO, "docs/operations.md"), "utf8");
    const anchors = new Set([...operations.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
    for (const rule of alerting) {
      expect(["critical", "warning", "info"], rule.alert).toContain(rule.labels.severity);
      expect(rule.labels.incident, rule.alert).toMatch(/^[a-z-]+$/);
      expect(rule.labels.scenario, rule.alert).toMatch(/^S\d+( S\d+)*$/);
      expect(rule.annotations.summary?.length, rule.alert).toBeGreaterThan(20);
      expect(rule.annotations.description?.length, rule.alert).toBeGreaterThan(40);
      const url = rule.annotations.runbook_url ?? "";
      expect(url, rule.alert).toBe(`docs/operations.md#${rule.alert.toLowerCase()}`);
      expect(anchors.has(url.split("#")[1]!), `docs/operations.md has a section #${url.split("#")[1]}`).toBe(true);
    }
  });
});
