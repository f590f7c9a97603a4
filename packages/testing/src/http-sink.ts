import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the sink received, as it arrived. */
export interface SinkRequest {
  method: string;
  /** The request target as sent: path and query (`/hook?x=1`). */
  url: string;
  /** The path alone, without the query. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body as UTF-8 text ("" when there was none); `rawBody` has the bytes. */
  body: string;
  rawBody: Buffer;
  /** Tick's delivery headers, read out for assertions. */
  idempotencyKey: string | undefined;
  attemptId: string | undefined;
  attemptNumber: string | undefined;
  fencingToken: string | undefined;
  /** Date.now() when the whole request had arrived. */
  at: number;
}

/** How the sink answers one request; every field but `status` is optional. */
export interface SinkAnswer {
  status: number;
  /** Response headers. Without `body` and `headers`, the answer is JSON (`{"ok":<2xx>}`). */
  headers?: http.OutgoingHttpHeaders;
  /** The response body; an array is sent as separate writes, `chunkDelayMs` apart (a trickling body). */
  body?: string | string[];
  chunkDelayMs?: number;
  /** Waits this long before answering (after `hold`). */
  delayMs?: number;
  /** Answers once this settles; a rejection resets the connection instead of answering. */
  hold?: Promise<void>;
}

/** Chooses the answer to a request (`index`: its place among every request received, from 0); undefined answers 200. */
export type SinkBehaviour = (req: SinkRequest, index: number) => SinkAnswer | undefined;

export interface SinkOptions {
  /** The behaviour until `respond` sets another; default every request 200. */
  respond?: SinkBehaviour;
  /**
   * What makes two requests the same effect (a charge, an email): by default the Idempotency-Key
   * header. A request with no key is recorded but counts toward no effect.
   */
  effectKey?: (req: SinkRequest) => string | undefined;
}

/**
 * A local HTTP endpoint for tests (127.0.0.1, a free port): records every request (method, path,
 * headers, body), answers as the test says, and counts effects: requests it answered 2xx, per
 * idempotency key, so a test can say no key took effect twice.
 */
export async function startSink(options: SinkOptions = {}) {
  const requests: SinkRequest[] = [];
  const effects = new Map<string, number>();
  const effectKey = options.effectKey ?? ((req: SinkRequest) => req.idempotencyKey);
  let behaviour: SinkBehaviour = options.respond ?? (() => undefined);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    const answer = async () => {
      const url = req.url ?? "/";
      const rawBody = Buffer.concat(chunks);
      const header = (name: string) => req.headers[name] as string | undefined;
      const record: SinkRequest = {
        method: req.method ?? "GET",
        url,
        path: url.split("?")[0]!,
        headers: req.headers,
        body: rawBody.toString("utf8"),
        rawBody,
        idempotencyKey: header("idempotency-key"),
        attemptId: header("tick-attempt-id"),
        attemptNumber: header("tick-attempt-number"),
        fencingToken: header("tick-fencing-token"),
        at: Date.now(),
      };
      requests.push(record);
      const plan = behaviour(record, requests.length - 1) ?? { status: 200 };
      if (plan.hold) await plan.hold;
      if (plan.delayMs) await new Promise((r) => setTimeout(r, plan.delayMs));
      if (plan.status >= 200 && plan.status < 300) {
        const key = effectKey(record);
        if (key !== undefined) effects.set(key, (effects.get(key) ?? 0) + 1);
      }
      if (plan.body === undefined && plan.headers === undefined) {
        res.writeHead(plan.status, { "content-type": "application/json" }).end(JSON.stringify({ ok: plan.status < 300 }));
        return;
      }
      res.writeHead(plan.status, plan.headers ?? {});
      const parts = typeof plan.body === "string" ? [plan.body] : (plan.body ?? []);
      for (const part of parts.slice(0, -1)) {
        res.write(part);
        if (plan.chunkDelayMs) await new Promise((r) => setTimeout(r, plan.chunkDelayMs));
      }
      res.end(parts.at(-1));
    };
    // A failure while answering (a rejected hold, a closed socket) resets the connection.
    req.on("end", () => {
      answer().catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    /** The address of `path` on the sink. */
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    requests,
    /** Sets how the sink answers from now on. */
    respond(b: SinkBehaviour) {
      behaviour = b;
    },
    /** How many times the effect with this key was applied (requests with it answered 2xx). */
    effects: (key: string) => effects.get(key) ?? 0,
    /** Effect key → times applied, for every key applied at least once. */
    effectCounts: (): ReadonlyMap<string, number> => effects,
    /** Applications beyond the first, summed over every key: 0 when no effect happened twice. */
    duplicateEffects: () => [...effects.values()].reduce((sum, n) => sum + n - 1, 0),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export type Sink = Awaited<ReturnType<typeof startSink>>;
