import { Gauge, type Registry } from "prom-client";

export interface StoreProbeOptions {
  registry: Registry;
  /** The database's clock (@tick/db's sql.databaseNow on the process's pool). */
  databaseNow: () => Promise<Date>;
  /** Pings Redis (the fail-fast connection). */
  pingRedis: () => Promise<unknown>;
  /** Default 15 s. */
  intervalMs?: number;
  /** A probe not answered within this counts as down (default 5 s). */
  timeoutMs?: number;
}

export interface StoreProbe {
  /** One probe now (tests; the timer runs it every interval). */
  probe(): Promise<void>;
  stop(): void;
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Every interval, asks the database for its clock and Redis for a PONG, and exports what it saw:
 * `tick_clock_offset_seconds`, this process's wall clock minus the database's (read at the midpoint of
 * the round trip, so a slow answer shifts it by at most half the round trip), and `tick_store_up`.
 * Tick decides by the database clock (S13); the offset says how far a host drifted, for an alert before it
 * reaches the lease margins, and `tick_store_up` tells a store outage from a broken process.
 * Until its first reading the offset is NaN, not 0: a process that has not measured yet must not look like a
 * host in perfect sync (an alert on `abs(...) > x` stays quiet on NaN, and a check can tell the two apart).
 */
export function startStoreProbe(options: StoreProbeOptions): StoreProbe {
  const { registry, timeoutMs = 5_000 } = options;
  const offset = new Gauge({
    name: "tick_clock_offset_seconds",
    help: "This process's wall clock minus the database's clock, measured at the midpoint of a query's round trip (positive: this host is ahead)",
    registers: [registry],
  });
  offset.set(Number.NaN);
  const up = new Gauge({ name: "tick_store_up", help: "1 when the store answered this process's last probe, 0 when not (store: database, redis)", labelNames: ["store"], registers: [registry] });
  const probe = async () => {
    await Promise.all([
      (async () => {
        try {
          const before = Date.now();
          const db = await within(options.databaseNow(), timeoutMs);
          const after = Date.now();
          offset.set(((before + after) / 2 - db.getTime()) / 1000);
          up.set({ store: "database" }, 1);
        } catch {
          up.set({ store: "database" }, 0);
        }
      })(),
      within(options.pingRedis(), timeoutMs).then(
        () => up.set({ store: "redis" }, 1),
        () => up.set({ store: "redis" }, 0),
      ),
    ]);
  };
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= probe().finally(() => (running = undefined));
  };
  tick();
  const timer = setInterval(tick, options.intervalMs ?? 15_000);
  timer.unref();
  return { probe, stop: () => clearInterval(timer) };
}
