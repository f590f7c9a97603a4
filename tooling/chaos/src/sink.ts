import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the downstream received. */
export interface Delivery {
  key: string;
  /** The job (tick-job-id), the attempt (tick-attempt-id) and its fencing token, as the request named them. */
  jobId: string;
  attemptId: string;
  fencingToken: number;
  path: string;
  /** When the request arrived, and when it was answered (a slow path answers seconds later). */
  receivedAt: number;
  at: number;
  status: number;
}

/**
 * The tenants' downstream, as a careful one is written: every request is recorded, and its effect (say,
 * a charge) is applied once per Idempotency-Key, so a retried or duplicated request is a raw duplicate
 * delivery, never a second effect. Paths choose the behaviour:
 *   /ok/...      200 at once            /slow/...   200 after 1.5-3 s
 *   /dep/...     503 while the dependency is down, else 200
 *   /fail/...    400 (the job dies without retrying)
 *   /hook        completion webhooks (recorded, 200)
 *   /capped/<flow key>/...  200 after 0.2-0.6 s, each call's start and end kept per flow key (keyedCalls)
 *   /rated/<flow key>/...   200 at once
 *   /debounced/<debounce key>/<the create's Idempotency-Key>   200 at once (the path names the create whose payload ran)
 */
/** A call of a keyed job at the downstream: its flow key, attempt, and when it arrived and was answered. */
export interface KeyedCall {
  flowKey: string;
  attemptId: string;
  start: number;
  end: number;
}

export async function startChaosSink(random: () => number) {
  const deliveries: Delivery[] = [];
  const keyedCalls: KeyedCall[] = [];
  const effects = new Map<string, { at: number; attemptId: string }>();
  const webhooks: { id: string; at: number }[] = [];
  let dependencyDown = false;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    const answer = async () => {
      const path = req.url ?? "/";
      if (path.startsWith("/hook")) {
        webhooks.push({ id: String(req.headers["webhook-id"] ?? ""), at: Date.now() });
        res.writeHead(200).end();
        return;
      }
      let status = 200;
      const start = Date.now();
      if (path.startsWith("/slow/")) await new Promise((r) => setTimeout(r, 1_500 + random() * 1_500));
      if (path.startsWith("/capped/")) {
        await new Promise((r) => setTimeout(r, 200 + random() * 400));
        keyedCalls.push({ flowKey: path.split("/")[2] ?? "", attemptId: String(req.headers["tick-attempt-id"] ?? ""), start, end: Date.now() });
      }
      if (path.startsWith("/dep/") && dependencyDown) status = 503;
      if (path.startsWith("/fail/")) status = 400;
      const key = String(req.headers["idempotency-key"] ?? "");
      const attemptId = String(req.headers["tick-attempt-id"] ?? "");
      // Tokens are below 2^53 (a restore fence's floor is epoch milliseconds × 1000): exact as numbers.
      const fencingToken = Number(req.headers["tick-fencing-token"] ?? 0);
      deliveries.push({ key, jobId: String(req.headers["tick-job-id"] ?? ""), attemptId, fencingToken, path, receivedAt: start, at: Date.now(), status });
      if (status === 200 && !effects.has(key)) effects.set(key, { at: Date.now(), attemptId });
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ ok: status === 200 }));
    };
    // A failure while answering (the client already gone) resets the connection.
    req.on("end", () => {
      answer().catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    deliveries,
    keyedCalls,
    effects,
    webhooks,
    setDependencyDown(down: boolean) {
      dependencyDown = down;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export type ChaosSink = Awaited<ReturnType<typeof startChaosSink>>;
