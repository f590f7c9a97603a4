import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "./paths.js";
import { documentedMetrics, isExported, readPromql, withGrafanaVariables } from "./promql.js";

interface Target {
  expr: string;
  legendFormat?: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string | { query: string } }[] };
}

const dashboard = JSON.parse(fs.readFileSync(path.join(REPO, "infra/grafana/tick.json"), "utf8")) as Dashboard;
const documented = documentedMetrics();
const graphs = dashboard.panels.filter((p) => p.type !== "row");
const queries = [
  ...graphs.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
  ...dashboard.templating.list
    .filter((v) => v.type === "query")
    .map((v) => ({ where: `variable $${v.name}`, expr: /label_values\((\w+)/.exec(typeof v.query === "string" ? v.query : v.query.query)![1]! })),
];

describe("infra/grafana/tick.json", () => {
  it("has the sections an operator looks for: overview, per tenant, dispatch, workers, dependencies, recovery", () => {
    const rows = dashboard.panels.filter((p) => p.type === "row").map((p) => p.title);
    for (const section of ["Overview", "Per tenant", "Dispatch", "Workers", "Dependencies", "Recovery"]) expect(rows.some((r) => r.startsWith(section)), section).toBe(true);
    expect(graphs.length).toBeGreaterThanOrEqual(25);
    expect(new Set(graphs.map((p) => p.title)).size).toBe(graphs.length);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
  });

  it("lays its panels out on Grafana's 24-column grid without overlap", () => {
    const cells = new Set<string>();
    for (const p of dashboard.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x + w, p.title).toBeLessThanOrEqual(24);
      for (let i = x; i < x + w; i++) for (let j = y; j < y + h; j++) {
        expect(cells.has(`${i},${j}`), `${p.title} overlaps at ${i},${j}`).toBe(false);
        cells.add(`${i},${j}`);
      }
    }
  });

  it("every query parses with Prometheus' own grammar and uses only metrics the processes export", () => {
    expect(documented.size).toBeGreaterThan(40);
    expect(queries.length).toBeGreaterThan(40);
    for (const q of queries) {
      const { errors, metrics } = readPromql(withGrafanaVariables(q.expr));
      expect(errors, `${q.where}: ${q.expr}`).toEqual([]);
      expect(metrics.length, `${q.where} reads no metric`).toBeGreaterThan(0);
      for (const name of metrics) expect(isExported(name, documented), `${q.where}: ${name} is not exported`).toBe(true);
    }
  });

  it("the checks would catch a broken query, an unknown metric and a histogram read without its series suffix", () => {
    expect(readPromql("sum(rate(tick_dispatched_total[5m])) by (").errors.length).toBeGreaterThan(0);
    expect(readPromql('sum by (x) (tick_no_such_thing{a="b"})').metrics).toEqual(["tick_no_such_thing"]);
    expect(isExported("tick_no_such_thing", documented)).toBe(false);
    expect(isExported("tick_scheduling_lag_seconds", documented)).toBe(false);
    expect(isExported("tick_scheduling_lag_seconds_bucket", documented)).toBe(true);
    expect(isExported("tick_dispatched_total_bucket", documented)).toBe(false);
  });
});
