import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCidrList } from "@tick/core";
import { freePort, startSink, type Sink, type SinkAnswer } from "@tick/testing";
import { createHttpCaller, type Cancellation } from "./http-call.js";

// The worker's HTTP path (undici's dispatch with a handler of its own) against a real local server:
// every way a call can end.
let server: Sink;
let base: string;
let seen: Sink["requests"];

const answers: Record<string, SinkAnswer> = {
  "/ok": { status: 201, headers: { "content-type": "text/plain" }, body: "done" },
  "/big": { status: 200, body: "x".repeat(10_000) },
  "/slow": { status: 200, body: "late", delayMs: 2_000 },
  "/busy": { status: 429, headers: { "retry-after": "7" }, body: "slow down" },
  "/moved": { status: 302, headers: { location: "/ok" }, body: "" },
  "/trickle": { status: 200, body: ["a", "b"], chunkDelayMs: 2_000 },
};

beforeAll(async () => {
  server = await startSink({ respond: (req) => answers[req.path] ?? { status: 404, body: "" } });
  seen = server.requests;
  base = server.url("");
});
afterAll(() => server.close());

const caller = () => createHttpCaller({ allowedCidrs: parseCidrList("127.0.0.0/8"), maxResponseBytes: 1_000, connections: 4 });
const call = (h: ReturnType<typeof caller>, path: string, extra: Partial<Parameters<ReturnType<typeof caller>["call"]>[0]> = {}) =>
  h.call({ method: "POST", url: `${base}${path}`, headers: { "x-test": "1" }, body: '{"a":1}', timeoutMs: 5_000, ...extra });

describe("createHttpCaller", () => {
  it("sends method, headers and body and returns status and body", async () => {
    const h = caller();
    try {
      const r = await call(h, "/ok?q=1");
      expect(r).toMatchObject({ status: 201, body: "done", retryAfter: null });
      const last = seen.at(-1)!;
      expect(last).toMatchObject({ url: "/ok?q=1", method: "POST", body: '{"a":1}' });
      expect(last.headers["x-test"]).toBe("1");
    } finally {
      await h.close();
    }
  });

  it("keeps at most maxResponseBytes of a large body and ends the call there", async () => {
    const h = caller();
    try {
      const r = await call(h, "/big");
      expect(r.status).toBe(200);
      expect(r.body).toHaveLength(1_000);
      // The connection pool still works after a cut response.
      expect((await call(h, "/ok")).status).toBe(201);
    } finally {
      await h.close();
    }
  });

  it("times out a slow answer and a trickling body", async () => {
    const h = caller();
    try {
      expect(await call(h, "/slow", { timeoutMs: 200 })).toMatchObject({ timedOut: true });
      expect(await call(h, "/trickle", { timeoutMs: 300 })).toMatchObject({ timedOut: true });
    } finally {
      await h.close();
    }
  });

  it("reads Retry-After and does not follow redirects", async () => {
    const h = caller();
    try {
      expect(await call(h, "/busy")).toMatchObject({ status: 429, retryAfter: "7" });
      expect(await call(h, "/moved")).toMatchObject({ status: 302 });
    } finally {
      await h.close();
    }
  });

  it("stops a call in flight when its cancellation fires, and sends nothing once cancelled or withheld", async () => {
    const h = caller();
    try {
      let listener: ((reason: string) => void) | null = null;
      let cancelled: string | null = null;
      const cancellation: Cancellation = {
        get cancelled() {
          return cancelled;
        },
        onCancel: (l) => (listener = l),
      };
      const pending = call(h, "/slow", { cancellation });
      await new Promise((r) => setTimeout(r, 100));
      cancelled = "lease lost";
      listener!("lease lost");
      const r = await pending;
      expect(r.aborted).toBe(true);
      expect(r.durationMs).toBeLessThan(1_500);
      const before = seen.length;
      expect(await call(h, "/ok", { cancellation })).toMatchObject({ aborted: true, durationMs: 0 });
      expect(await call(h, "/ok", { mayStillSend: () => "no lease left" })).toMatchObject({ withheld: "no lease left" });
      expect(seen.length).toBe(before);
    } finally {
      await h.close();
    }
  });

  it("refuses addresses outside the allowed ranges and reports a refused connection as a network error", async () => {
    const h = createHttpCaller({ allowedCidrs: parseCidrList("10.0.0.0/8"), maxResponseBytes: 1_000 });
    try {
      expect((await call(h, "/ok")).blocked).toBeTruthy();
      // A name that resolves to a refused address is refused at connect time (DNS is checked there).
      const viaName = await h.call({ method: "GET", url: base.replace("127.0.0.1", "localhost") + "/ok", headers: {}, body: null, timeoutMs: 2_000 });
      expect(viaName.blocked).toBeTruthy();
    } finally {
      await h.close();
    }
    const open = caller();
    try {
      const closedPort = await freePort();
      const r = await open.call({ method: "GET", url: `http://127.0.0.1:${closedPort}/`, headers: {}, body: null, timeoutMs: 2_000 });
      expect(r.networkError).toBeTruthy();
    } finally {
      await open.close();
    }
  });
});
