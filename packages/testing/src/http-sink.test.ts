import { afterEach, describe, expect, it } from "vitest";
import { startSink, type Sink } from "./http-sink.js";

let sink: Sink | undefined;
afterEach(async () => {
  await sink?.close();
  sink = undefined;
});

describe("startSink", () => {
  it("listens on 127.0.0.1 and records method, path, query, headers and body", async () => {
    sink = await startSink();
    expect(sink.url("/x")).toBe(`http://127.0.0.1:${sink.port}/x`);
    const res = await fetch(sink.url("/hook?a=1"), { method: "PUT", headers: { "idempotency-key": "k1", "tick-attempt-number": "2", "x-test": "yes" }, body: "héllo" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(sink.requests).toHaveLength(1);
    expect(sink.requests[0]).toMatchObject({ method: "PUT", url: "/hook?a=1", path: "/hook", body: "héllo", idempotencyKey: "k1", attemptNumber: "2", attemptId: undefined });
    expect(sink.requests[0]!.headers["x-test"]).toBe("yes");
    expect(sink.requests[0]!.rawBody.equals(Buffer.from("héllo"))).toBe(true);
  });

  it("answers as the test says: status, headers, body, a delay, a trickle; a rejected hold resets the connection", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink = await startSink({
      respond: (req) => {
        if (req.path === "/text") return { status: 201, headers: { "content-type": "text/plain", "x-a": "1" }, body: "done" };
        if (req.path === "/slow") return { status: 202, delayMs: 150 };
        if (req.path === "/trickle") return { status: 200, body: ["a", "b"], chunkDelayMs: 100 };
        if (req.path === "/held") return { status: 200, hold: held };
        if (req.path === "/reset") return { status: 200, hold: Promise.reject(new Error("no")) };
        return undefined;
      },
    });
    const text = await fetch(sink.url("/text"));
    expect([text.status, text.headers.get("x-a"), await text.text()]).toEqual([201, "1", "done"]);
    const started = Date.now();
    expect((await fetch(sink.url("/slow"))).status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(await (await fetch(sink.url("/trickle"))).text()).toBe("ab");
    const pending = fetch(sink.url("/held"));
    setTimeout(release, 50);
    expect((await pending).status).toBe(200);
    await expect(fetch(sink.url("/reset"))).rejects.toThrow();
    sink.respond(() => ({ status: 418 }));
    expect((await fetch(sink.url("/other"))).status).toBe(418);
  });

  it("counts effects per idempotency key: only 2xx answers take effect, a request without a key counts for none", async () => {
    sink = await startSink();
    let failing = true;
    sink.respond(() => ({ status: failing ? 503 : 200 }));
    const send = (key?: string) => fetch(sink!.url(), { method: "POST", headers: key ? { "idempotency-key": key } : {} });
    await send("a");
    expect(sink.effects("a")).toBe(0);
    failing = false;
    await send("a");
    await send("b");
    await send();
    expect(sink.effects("a")).toBe(1);
    expect(sink.duplicateEffects()).toBe(0);
    await send("a");
    expect(sink.effects("a")).toBe(2);
    expect(sink.duplicateEffects()).toBe(1);
    expect([...sink.effectCounts()]).toEqual([
      ["a", 2],
      ["b", 1],
    ]);
    expect(sink.requests).toHaveLength(5);
  });

  it("takes another effect key when told (a body field here)", async () => {
    sink = await startSink({ effectKey: (req) => (JSON.parse(req.body) as { key?: string }).key });
    for (const key of ["x", "x", "y"]) await fetch(sink.url(), { method: "POST", body: JSON.stringify({ key }) });
    expect(sink.effects("x")).toBe(2);
    expect(sink.duplicateEffects()).toBe(1);
  });
});
