import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The downstream every system under test calls: answers 200 at once and counts what arrived, by key
 * (the Idempotency-Key header, or the `key` field of the JSON body for the peers, which send no header).
 */
export interface BenchSink {
  url: string;
  received(): number;
  /** Distinct keys seen. */
  distinct(): number;
  /** When each distinct key first arrived (performance.now(), in arrival order), since the last reset. */
  arrivals(): readonly number[];
  reset(): void;
  close(): Promise<void>;
}

export async function startBenchSink(): Promise<BenchSink> {
  let count = 0;
  let keys = new Set<string>();
  let arrivals: number[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      count++;
      const header = req.headers["idempotency-key"];
      let key = typeof header === "string" ? header : "";
      if (!key) {
        try {
          const parsed = (JSON.parse(body) as { key?: unknown }).key;
          key = typeof parsed === "string" ? parsed : "";
        } catch {
          key = "";
        }
      }
      if (key && !keys.has(key)) {
        keys.add(key);
        arrivals.push(performance.now());
      }
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/work`,
    received: () => count,
    distinct: () => keys.size,
    arrivals: () => arrivals,
    reset() {
      count = 0;
      keys = new Set();
      arrivals = [];
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
