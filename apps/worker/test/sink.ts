import http from "node:http";
import type { AddressInfo } from "node:net";

export interface SinkRequest {
  path: string;
  idempotencyKey: string | undefined;
  attemptId: string | undefined;
  attemptNumber: string | undefined;
  fencingToken: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

type Behaviour = (req: SinkRequest, index: number) => { status: number; delayMs?: number; hold?: Promise<void> } | undefined;

/** A local HTTP endpoint that records every request and answers as the test says. */
export async function startSink() {
  const requests: SinkRequest[] = [];
  let behaviour: Behaviour = () => undefined;
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    const answer = async () => {
      const record: SinkRequest = {
        path: req.url ?? "/",
        idempotencyKey: req.headers["idempotency-key"] as string | undefined,
        attemptId: req.headers["tick-attempt-id"] as string | undefined,
        attemptNumber: req.headers["tick-attempt-number"] as string | undefined,
        fencingToken: req.headers["tick-fencing-token"] as string | undefined,
        headers: req.headers,
        body,
        at: Date.now(),
      };
      requests.push(record);
      const plan = behaviour(record, requests.length - 1) ?? { status: 200 };
      if (plan.hold) await plan.hold;
      if (plan.delayMs) await new Promise((r) => setTimeout(r, plan.delayMs));
      res.writeHead(plan.status, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: plan.status < 300 }));
    };
    // A failure while answering (a rejected hold, a closed socket) resets the connection.
    req.on("end", () => {
      answer().catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    requests,
    respond(b: Behaviour) {
      behaviour = b;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export type Sink = Awaited<ReturnType<typeof startSink>>;
