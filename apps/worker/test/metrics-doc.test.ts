// docs/observability.md cannot drift from what the processes export (#21): its table of every metric is
// compared with a scrape of a running scheduler and worker, both ways, with each metric's type, and with
// the labels of every series that has samples.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { waitFor } from "@tick/testing";
import { declaredMetrics, samples, scrape } from "./metrics-scrape.js";
import { type ProcessWorld, useProcessWorld } from "./harness.js";
import type { Sink } from "./sink.js";

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/observability.md");
const PROCESSES = { S: "scheduler", W: "worker" } as const;

interface DocumentedMetric {
  name: string;
  type: string;
  labels: string[];
  processes: ("scheduler" | "worker")[];
}

/** The rows of the "Every metric" table: | `name` | type | `label` (...), ... | S, W | meaning | scenarios |. */
function documentedMetrics(): DocumentedMetric[] {
  const text = readFileSync(DOC, "utf8");
  const table = text.slice(text.indexOf("## Every metric"));
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
        processes: processes!.split(",").map((p) => PROCESSES[p.trim() as keyof typeof PROCESSES]),
      };
    });
}

let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

describe("docs/observability.md", () => {
  it("lists exactly the tick_ metrics each process exports, with their types and labels", async () => {
    const documented = documentedMetrics();
    expect(documented.length).toBeGreaterThan(40);
    expect(new Set(documented.map((m) => m.name)).size).toBe(documented.length);
    const scheduler = await w.startScheduler();
    const worker = await w.startWorker();
    // A job with a webhook, so most labelled series have samples whose labels can be checked.
    const t = await w.createTenant();
    await w.createJob(t, sink.url("/work"), { callbackUrl: sink.url("/done") });
    await waitFor(() => sink.requests.some((r) => r.path === "/done"), { timeoutMs: 20_000, description: "the job's webhook" });

    for (const [app, port] of [["scheduler", scheduler.healthPort], ["worker", worker.healthPort]] as const) {
      const text = await scrape(port);
      const declared = new Map([...declaredMetrics(text)].filter(([name]) => name.startsWith("tick_")));
      const expected = documented.filter((m) => m.processes.includes(app));
      // Listed for this process ⇒ exported by it, with that type; exported ⇒ listed for it.
      for (const m of expected) expect(declared.get(m.name), `${m.name} (${app})`).toBe(m.type);
      expect([...declared.keys()].filter((name) => !expected.some((m) => m.name === name)), `exported by the ${app} but not in docs/observability.md`).toEqual([]);
      // Every sample carries the documented labels (plus app, and le on histogram buckets).
      for (const sample of samples(text).filter((s) => s.name.startsWith("tick_"))) {
        const m = expected.find((d) => sample.name === d.name || (d.type === "histogram" && ["_bucket", "_sum", "_count"].some((x) => sample.name === d.name + x)));
        expect(m, sample.name).toBeDefined();
        const own = Object.keys(sample.labels).filter((l) => l !== "app" && l !== "le");
        expect(own.sort(), `labels of ${sample.name}`).toEqual([...m!.labels].sort());
        expect(sample.labels.app).toBe(app);
      }
    }
  });
});
