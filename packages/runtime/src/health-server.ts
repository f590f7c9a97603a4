import http from "node:http";
import { isIPv6, type AddressInfo } from "node:net";
import os from "node:os";
import type { Registry } from "prom-client";
import type { Logger } from "pino";

export type ReadinessCheck = () => Promise<void>;

export interface HealthServerOptions {
  port: number;
  /** The address to listen on (TICK_BIND_HOST). */
  host: string;
  logger: Logger;
  /** Each must resolve for /readyz to answer 200; a rejection or timeout names the failing check. */
  checks: Record<string, ReadinessCheck>;
  registry?: Registry;
  checkTimeoutMs?: number;
  /** Facts added to every /readyz body (a scheduler's held shards, the process's ID and version). */
  about?: () => Record<string, unknown>;
  /** Answer 503 `starting` until markStarted(): the server listens before the app has started. */
  starting?: boolean;
}

/** What decides and describes readiness once the app has started (it may replace the store checks). */
export interface Readiness {
  checks?: Record<string, ReadinessCheck>;
  about?: () => Record<string, unknown>;
}

export interface HealthServer {
  /** The address and port it listens on. */
  host: string;
  port: number;
  /** After this, /readyz answers 503 so load balancers stop sending work while we drain. */
  markShuttingDown(): void;
  /** The app has started: readiness is decided by its checks from now on. */
  markStarted(readiness?: Readiness): void;
  close(): Promise<void>;
}

/**
 * The URL of a health server's /readyz as this process registers it for others (the console's status page):
 * the address it is bound to, or the host name when bound to every interface.
 */
export function advertisedReadyzUrl(host: string, port: number): string {
  const name = host === "0.0.0.0" || host === "::" ? os.hostname() : host;
  return `http://${isIPv6(name) ? `[${name}]` : name}:${port}/readyz`;
}

async function runCheck(check: ReadinessCheck, timeoutMs: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check in parallel; returns the failing ones with their error message (empty: ready). */
export async function runReadinessChecks(
  checks: Record<string, ReadinessCheck>,
  timeoutMs: number,
): Promise<Record<string, string>> {
  const names = Object.keys(checks);
  const results = await Promise.all(names.map((name) => runCheck(checks[name]!, timeoutMs)));
  return Object.fromEntries(names.flatMap((name, i) => (results[i] ? [[name, results[i]]] : [])));
}

/**
 * Liveness (`/healthz`: the event loop answers), readiness (`/readyz`: dependencies answer and we are
 * not shutting down) and Prometheus metrics (`/metrics`) on a small side port.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const { logger, registry, checkTimeoutMs = 2000 } = options;
  let { checks, about } = options;
  let shuttingDown = false;
  let starting = options.starting ?? false;

  const answer = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const send = (status: number, body: unknown, type = "application/json") => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(typeof body === "string" ? body : JSON.stringify(body));
    };
    const path = (req.url ?? "/").split("?")[0];
    try {
      if (path === "/healthz") return send(200, { status: "ok" });
      if (path === "/readyz") {
        if (shuttingDown) return send(503, { status: "shutting_down" });
        if (starting) return send(503, { status: "starting" });
        const failed = await runReadinessChecks(checks, checkTimeoutMs);
        const facts = about?.() ?? {};
        if (Object.keys(failed).length) return send(503, { status: "not_ready", failed, ...facts });
        return send(200, { status: "ready", checks: Object.keys(checks), ...facts });
      }
      if (path === "/metrics" && registry) return send(200, await registry.metrics(), registry.contentType);
      return send(404, { status: "not_found" });
    } catch (err) {
      logger.error({ err }, "health endpoint failed");
      return send(500, { status: "error" });
    }
  };
  // answer() catches its own errors; this only catches a failure to send the 500 itself.
  const server = http.createServer((req, res) => {
    answer(req, res).catch((err: unknown) => logger.error({ err }, "health endpoint could not answer"));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address: host, port } = server.address() as AddressInfo;
  logger.info({ host, port }, "health server listening");

  return {
    host,
    port,
    markShuttingDown: () => {
      shuttingDown = true;
    },
    markStarted: (readiness) => {
      if (readiness?.checks) checks = readiness.checks;
      if (readiness?.about) about = readiness.about;
      starting = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
