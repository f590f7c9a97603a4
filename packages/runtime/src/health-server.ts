import http from "node:http";
import type { AddressInfo } from "node:net";
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
}

export interface HealthServer {
  /** The address and port it listens on. */
  host: string;
  port: number;
  /** After this, /readyz answers 503 so load balancers stop sending work while we drain. */
  markShuttingDown(): void;
  close(): Promise<void>;
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
  const { logger, checks, registry, checkTimeoutMs = 2000 } = options;
  let shuttingDown = false;

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
        const failed = await runReadinessChecks(checks, checkTimeoutMs);
        if (Object.keys(failed).length) return send(503, { status: "not_ready", failed });
        return send(200, { status: "ready", checks: Object.keys(checks) });
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
