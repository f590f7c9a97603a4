import { readFileSync } from "node:fs";

/** One sample line of a Prometheus exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A label value as written in the text format, unescaped (`\\`, `\"`, `\n`). */
const unescapeLabel = (v: string) => v.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));

/** A sample value: a float, or `+Inf`, `-Inf`, `NaN` in any case (prom-client writes `Nan`). */
export function sampleValue(raw: string): number {
  const lower = raw.toLowerCase();
  if (lower === "+inf" || lower === "inf") return Infinity;
  if (lower === "-inf") return -Infinity;
  if (lower === "nan") return Number.NaN;
  return Number(raw);
}

/**
 * The samples of an exposition in the Prometheus text format: one per series line (comments skipped), with
 * its labels unescaped and its value read as the format writes it; a trailing timestamp is ignored. The one
 * parser of the tests, the chaos suite and the bench.
 */
export function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = unescapeLabel(value!);
    out.push({ name: match[1]!, labels, value: sampleValue(match[3]!) });
  }
  return out;
}

/** The samples named exactly `name` whose labels include `labels`. */
export function matching(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return samples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The sum of the samples named exactly `name` whose labels include `labels` (0 when there are none). */
export function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number {
  return matching(text, name, labels).reduce((sum, s) => sum + s.value, 0);
}

/** Every metric the exposition declares (`# TYPE name type`), with its type. */
export function declaredMetrics(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(name!, type!);
  return out;
}

/** The process letters of docs/observability.md's table. */
const PROCESSES = { C: "console", S: "scheduler", W: "worker" } as const;
export type TickProcess = (typeof PROCESSES)[keyof typeof PROCESSES];

export interface DocumentedMetric {
  name: string;
  type: string;
  labels: string[];
  processes: TickProcess[];
}

/** The rows of the "Every metric" table of docs/observability.md: | `name` | type | `label` (...), ... | C, S, W | meaning | scenarios |. */
export function documentedMetrics(docPath: string): DocumentedMetric[] {
  const text = readFileSync(docPath, "utf8");
  // The section only: later sections have tables of their own whose rows may start with a metric name.
  const start = text.indexOf("## Every metric");
  const next = text.indexOf("\n## ", start + 1);
  const table = text.slice(start, next === -1 ? undefined : next);
  return table
    .split("\n")
    .filter((line) => line.startsWith("| `tick_"))
    .map((line) => {
      const cells = line.split("|").map((c) => c.trim());
      const [, name, type, labels, processes] = cells;
      return {
        name: name!.replace(/`/g, ""),
        type: type!,
        // Label names are the backticked words outside parentheses (inside them: the label's values).
        labels: [...labels!.replace(/\([^)]*\)/g, "").matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!),
        processes: processes!.split(",").map((p) => {
          const process = PROCESSES[p.trim() as keyof typeof PROCESSES];
          if (!process) throw new Error(`${name}: unknown process "${p.trim()}" in docs/observability.md`);
          return process;
        }),
      };
    });
}

/**
 * Where a process's scrape and the documented table disagree, both ways: a metric listed for the process
 * but not exported (or with another type), one exported but not listed for it, and a sample whose labels
 * are not the documented ones (besides `app`, which must name the process, and `le` on histogram buckets).
 * Empty: they agree.
 */
export function docMismatches(text: string, app: TickProcess, documented: readonly DocumentedMetric[]): string[] {
  const problems: string[] = [];
  const declared = new Map([...declaredMetrics(text)].filter(([name]) => name.startsWith("tick_")));
  const expected = documented.filter((m) => m.processes.includes(app));
  for (const m of expected) {
    const type = declared.get(m.name);
    if (type !== m.type) problems.push(`${m.name}: documented for the ${app} as a ${m.type}, exported ${type ? `as a ${type}` : "not at all"}`);
  }
  for (const name of declared.keys()) {
    if (!expected.some((m) => m.name === name)) problems.push(`${name}: exported by the ${app} but not listed for it in docs/observability.md`);
  }
  for (const sample of samples(text).filter((s) => s.name.startsWith("tick_"))) {
    const m = expected.find((d) => sample.name === d.name || (d.type === "histogram" && ["_bucket", "_sum", "_count"].some((x) => sample.name === d.name + x)));
    if (!m) continue; // reported above
    const own = Object.keys(sample.labels).filter((l) => l !== "app" && l !== "le").sort();
    const want = [...m.labels].sort();
    if (own.join(",") !== want.join(",")) problems.push(`${sample.name}: labels ${own.join(", ") || "(none)"}, documented ${want.join(", ") || "(none)"}`);
    if (sample.labels.app !== app) problems.push(`${sample.name}: app="${sample.labels.app ?? ""}", expected "${app}"`);
  }
  return [...new Set(problems)];
}
