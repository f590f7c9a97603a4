/** A value that must never appear in a process's output. */
export interface Secret {
  what: string;
  value: string;
}

export interface LogVerdict {
  lines: number;
  jobLines: number;
  violations: string[];
}

/** The ID fields a line about a job, an attempt or a shard must carry together (pino JSON lines). */
const REQUIRED: { when: string; need: string[] }[] = [
  { when: "jobId", need: ["tenantId"] },
  { when: "attemptId", need: ["tenantId", "jobId", "shard", "epoch"] },
];

/**
 * Reads every process's output of the run: no line may contain an API key, a signing secret or a
 * request body the workload sent (secrets), and every JSON line naming a job names its tenant, and every
 * line naming an attempt names its tenant, job, shard and epoch. Reports the first few offenders.
 */
export function checkLogs(outputs: { process: string; text: string }[], secrets: Secret[]): LogVerdict {
  const violations: string[] = [];
  let lines = 0;
  let jobLines = 0;
  const missing = new Map<string, { count: number; example: string }>();
  for (const { process, text } of outputs) {
    for (const line of text.split("\n")) {
      if (!line) continue;
      lines++;
      for (const s of secrets) if (line.includes(s.value)) violations.push(`${process}: ${s.what} in a log line: ${line.slice(0, 300)}`);
      if (!line.startsWith("{")) continue;
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (!("jobId" in entry) && !("attemptId" in entry)) continue;
      jobLines++;
      for (const rule of REQUIRED) {
        if (!(rule.when in entry)) continue;
        const absent = rule.need.filter((k) => entry[k] === undefined || entry[k] === null);
        if (absent.length) {
          const key = `${process.split(/[-. ]/)[0]}: "${String(entry.msg)}" lacks ${absent.join(", ")}`;
          const m = missing.get(key) ?? { count: 0, example: line.slice(0, 300) };
          m.count++;
          missing.set(key, m);
        }
      }
    }
  }
  for (const [key, m] of missing) violations.push(`${key} (${m.count} lines; e.g. ${m.example})`);
  return { lines, jobLines, violations };
}
