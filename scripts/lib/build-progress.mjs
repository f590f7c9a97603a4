// Follows `turbo run build --output-logs=new-only --log-order=grouped`: grouped output prints a task's
// lines in one burst once the task has finished, so a task whose lines have gone quiet is done.

// "@tick/db:build: cache miss, executing 1f2e…", "@tick/db#build:  ERROR  command … exited (2)"
const TASK_LINE = /^(\S+?)[:#]([\w-]+):\s?(.*)$/;

/** The state of one build, fed line by line; pure (the caller passes the time) so it can be tested. */
export function createBuildProgress() {
  const tasks = new Map();
  const summary = [];
  return {
    /** One line of turbo's output, read at `at` (ms). */
    line(text, at) {
      const match = TASK_LINE.exec(text);
      if (!match) {
        if (/ERROR|Failed:/.test(text)) summary.push(text);
        return;
      }
      const [, pkg, task, rest] = match;
      const id = `${pkg}:${task}`;
      let entry = tasks.get(id);
      if (!entry) {
        entry = { pkg, task, cached: /^cache hit/.test(rest), failed: false, lines: [], lastAt: at, settled: false };
        tasks.set(id, entry);
      }
      if (/^\s*ERROR\b/.test(rest)) entry.failed = true;
      entry.lines.push(text);
      entry.lastAt = at;
    },
    /** Tasks quiet for `quietMs` (their output is complete), each returned once. */
    settle(at, quietMs = 200) {
      const done = [...tasks.values()].filter((t) => !t.settled && at - t.lastAt >= quietMs);
      for (const t of done) t.settled = true;
      return done;
    },
    /** Package builds finished so far: run, or taken from the cache. */
    counts() {
      const builds = [...tasks.values()].filter((t) => t.task === "build" && t.settled);
      return { done: builds.length, built: builds.filter((t) => !t.cached).length, cached: builds.filter((t) => t.cached).length };
    },
    /** The output of every failed task, then turbo's own failure lines. */
    failureOutput() {
      return [...[...tasks.values()].filter((t) => t.failed).flatMap((t) => t.lines), ...summary];
    },
  };
}

/** "42s", "2m05s". */
export function formatElapsed(ms) {
  const seconds = Math.floor(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
}
