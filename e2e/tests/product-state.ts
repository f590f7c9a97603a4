import fs from "node:fs";

export interface ProductState {
  consoleUrl: string;
  email: string;
  password: string;
  apiKey: string;
  health: { console: string; scheduler: string; worker: string };
  /** Each process's Prometheus endpoint: the console's on its side port (CONSOLE_METRICS_PORT), never the public one. */
  metrics: { console: string; scheduler: string; worker: string };
}

/** What `scripts/start.mjs` wrote once the product was ready (path given by TICK_E2E_STATE). */
export function productState(): ProductState {
  const file = process.env.TICK_E2E_STATE;
  if (!file || !fs.existsSync(file)) {
    throw new Error("TICK_E2E_STATE must name the state.json of a running product (npm test sets it up)");
  }
  return JSON.parse(fs.readFileSync(file, "utf8")) as ProductState;
}
