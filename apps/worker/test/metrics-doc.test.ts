// docs/observability.md cannot drift from what the processes export: its table of every metric is
// compared with a scrape of a running scheduler and worker, both ways, with each metric's type, and with
// the labels of every series that has samples. The console's scrape is checked the same way in
// apps/console/test/metrics.test.ts (it needs the built Next server).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { docMismatches, documentedMetrics, waitFor, type Sink } from "@tick/testing";
import { scrape } from "./metrics-scrape.js";
import { type ProcessWorld, useProcessWorld } from "./harness.js";

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/observability.md");

let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

describe("docs/observability.md", () => {
  it("lists exactly the tick_ metrics each process exports, with their types and labels", async () => {
    const documented = documentedMetrics(DOC);
    expect(documented.length).toBeGreaterThan(40);
    expect(new Set(documented.map((m) => m.name)).size).toBe(documented.length);
    const scheduler = await w.startScheduler();
    const worker = await w.startWorker();
    // A job with a webhook, so most labelled series have samples whose labels can be checked.
    const t = await w.createTenant();
    await w.createJob(t, sink.url("/work"), { callbackUrl: sink.url("/done") });
    await waitFor(() => sink.requests.some((r) => r.path === "/done"), { timeoutMs: 20_000, description: "the job's webhook" });

    for (const [app, port] of [["scheduler", scheduler.healthPort], ["worker", worker.healthPort]] as const) {
      // Listed for this process ⇒ exported by it, with that type; exported ⇒ listed for it; every sample
      // carries the documented labels (plus app, and le on histogram buckets).
      expect(docMismatches(await scrape(port), app, documented), app).toEqual([]);
    }
  });
});
