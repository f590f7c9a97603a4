import path from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { documentedMetrics as readDocumentedMetrics } from "@tick/testing";
import { REPO } from "./paths.js";

/**
 * A PromQL expression read by Prometheus' own grammar (@prometheus-io/lezer-promql, the parser of the
 * Prometheus UI): its syntax errors (with their position) and the metric names its selectors use.
 */
export function readPromql(expr: string): { errors: string[]; metrics: string[] } {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const metrics = new Set<string>();
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(`syntax error at ${node.from}: "${expr.slice(Math.max(0, node.from - 10), node.to + 10)}"`);
      if (node.name === "Identifier" && node.node.parent?.name === "VectorSelector") metrics.add(expr.slice(node.from, node.to));
    },
  });
  return { errors, metrics: [...metrics] };
}

/** Grafana's variables in an expression, given values of the right form so Prometheus' grammar can read it. */
export function withGrafanaVariables(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__interval|\$__range/g, "5m").replace(/\$\{?(\w+)\}?/g, ".*");
}

/**
 * The metrics docs/observability.md lists, with their types (@tick/testing reads its table): the table a test
 * checks against a live scrape of every process (apps/worker/test/metrics-doc.test.ts and the console's), so a
 * name here is one a process exports.
 */
export function documentedMetrics(): Map<string, string> {
  return new Map(readDocumentedMetrics(path.join(REPO, "docs/observability.md")).map((m) => [m.name, m.type]));
}

/**
 * Whether a series name is exported: a documented metric, a histogram's _bucket/_sum/_count series, or one
 * of Node's default process metrics (prom-client's collectDefaultMetrics, on every process).
 */
export function isExported(name: string, documented: ReadonlyMap<string, string>): boolean {
  if (/^(process|nodejs)_/.test(name)) return true;
  if (documented.has(name)) return documented.get(name) !== "histogram";
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return base !== name && documented.get(base) === "histogram";
}
