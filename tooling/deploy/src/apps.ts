import type { z } from "zod";
// Each app exports its schema from its package (built: the scheduler's and worker's tsc, the console's own
// tsconfig.env.json); nothing here reads another package's source.
import { consoleEnvSchema } from "@tick/console/env";
import { schedulerEnvSchema } from "@tick/scheduler/env";
import { workerEnvSchema } from "@tick/worker/env";

export type AppName = "console" | "scheduler" | "worker";

/** Each app's environment schema (the one its composition root parses) and the variables it knows. */
const APP_ENV: Record<AppName, { schema: z.ZodType; variables: ReadonlySet<string> }> = {
  console: { schema: consoleEnvSchema, variables: new Set(Object.keys(consoleEnvSchema.shape)) },
  scheduler: { schema: schedulerEnvSchema, variables: new Set(Object.keys(schedulerEnvSchema.shape)) },
  worker: { schema: workerEnvSchema, variables: new Set(Object.keys(workerEnvSchema.shape)) },
};

/** The entry point each app runs from in the built repository (npm start runs the same ones). */
export const APP_ENTRY: Record<AppName, string[]> = {
  console: ["node", "node_modules/next/dist/bin/next", "start", "apps/console"],
  scheduler: ["node", "apps/scheduler/dist/main.js"],
  worker: ["node", "apps/worker/dist/main.js"],
};

/** Which app a container command runs, by its entry point; null for anything else (migrations, Postgres, Redis). */
export function appOf(command: readonly string[] | undefined): AppName | null {
  if (!command) return null;
  for (const [app, entry] of Object.entries(APP_ENTRY) as [AppName, string[]][]) {
    if (entry.every((part, i) => command[i] === part)) return app;
  }
  return null;
}

/** The health port variable of each app and its default (the console serves /healthz on its HTTP port). */
export const HEALTH_PORT: Record<AppName, { variable: string | null; fallback: number }> = {
  console: { variable: null, fallback: 3000 },
  scheduler: { variable: "SCHEDULER_HEALTH_PORT", fallback: 9464 },
  worker: { variable: "WORKER_HEALTH_PORT", fallback: 9465 },
};

/** The port each app serves Prometheus' /metrics on: the health port, and the console's side port (never its HTTP port). */
export const METRICS_PORT: Record<AppName, { variable: string; fallback: number }> = {
  console: { variable: "CONSOLE_METRICS_PORT", fallback: 9466 },
  scheduler: { variable: "SCHEDULER_HEALTH_PORT", fallback: 9464 },
  worker: { variable: "WORKER_HEALTH_PORT", fallback: 9465 },
};

/**
 * Problems of one container's environment against its app's schema: variables the app does not know (a typo
 * there is a setting silently ignored), and whatever its schema refuses (a required variable not set, a bad value).
 */
export function envProblems(app: AppName, env: Record<string, string>): string[] {
  const { schema, variables } = APP_ENV[app];
  const unknown = Object.keys(env).filter((k) => !variables.has(k)).map((k) => `${k} is not a ${app} setting`);
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ""));
  const parsed = schema.safeParse(cleaned);
  const refused = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "(environment)"}: ${i.message}`);
  return [...unknown, ...refused];
}
