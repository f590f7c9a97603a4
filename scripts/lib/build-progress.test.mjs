import { describe, expect, it } from "vitest";
import { createBuildProgress, formatElapsed } from "./build-progress.mjs";

// Lines as `turbo run build --output-logs=new-only --log-order=grouped --ui=stream` prints them.
const header = ["", "   • turbo 2.11.11", "   • Packages in scope: @tick/core, @tick/db, @tick/runtime", "   • Running build in 3 packages", ""];
const cachedCore = ["@tick/core:build: cache hit, suppressing logs 2933667a1c673f9d"];
const builtRuntime = [
  "@tick/runtime:build: cache miss, executing 904870c1ab7eafbc",
  "@tick/runtime:build: ",
  "@tick/runtime:build: > @tick/runtime@0.1.0 build",
  "@tick/runtime:build: > tsc -p tsconfig.json",
];
const failedDb = [
  "@tick/db:build: cache miss, executing 08549954fd20ee68",
  "@tick/db:build: src/x.ts(1,14): error TS2322: Type 'string' is not assignable to type 'number'.",
  "@tick/db:build: npm error Lifecycle script `build` failed with error:",
  "@tick/db#build:  ERROR  command (/work/packages/db) /usr/bin/npm run build exited (2)",
];
const failedSummary = ["", " Tasks:    2 successful, 3 total", "Cached:    1 cached, 3 total", "Failed:    @tick/db#build", "", " ERROR  run failed: command  exited (2)"];

function feed(progress, lines, at) {
  for (const line of lines) progress.line(line, at);
}

describe("build progress", () => {
  it("reports each task once its grouped output has gone quiet, built or from cache", () => {
    const progress = createBuildProgress();
    feed(progress, header, 0);
    expect(progress.counts()).toEqual({ done: 0, built: 0, cached: 0 });
    feed(progress, cachedCore, 1_000);
    feed(progress, builtRuntime, 5_000);
    expect(progress.settle(5_100).map((t) => t.pkg)).toEqual(["@tick/core"]);
    const later = progress.settle(5_200);
    expect(later.map((t) => [t.pkg, t.cached, t.failed])).toEqual([["@tick/runtime", false, false]]);
    expect(progress.settle(9_000)).toEqual([]);
    expect(progress.counts()).toEqual({ done: 2, built: 1, cached: 1 });
  });

  it("keeps a failed task's output and turbo's failure lines, and nothing of the tasks that passed", () => {
    const progress = createBuildProgress();
    feed(progress, [...header, ...cachedCore, ...builtRuntime, ...failedDb, ...failedSummary], 0);
    const settled = progress.settle(1_000);
    expect(settled.filter((t) => t.failed).map((t) => t.pkg)).toEqual(["@tick/db"]);
    expect(progress.failureOutput()).toEqual([...failedDb, "Failed:    @tick/db#build", " ERROR  run failed: command  exited (2)"]);
  });

  it("formats elapsed time as seconds, then minutes and seconds", () => {
    expect(formatElapsed(42_900)).toBe("42s");
    expect(formatElapsed(125_000)).toBe("2m05s");
  });
});
