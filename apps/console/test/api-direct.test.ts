import http from "node:http";
import { describe, expect, it } from "vitest";
import { jobBody, useConsole } from "./harness";

// Creates with an API key are answered ahead of Next's router (src/server/direct-api.ts), through the same
// pipeline; everything else is Next's. What a client sees must not tell the two apart, but for framing:
// the direct path sends a Content-Length where Next streams its answers chunked.
const suite = useConsole();

const SECURITY_HEADERS = ["x-content-type-options", "referrer-policy", "x-frame-options", "content-security-policy", "cache-control"];

const create = (headers: Record<string, string> = {}) =>
  fetch(`${suite.h.baseUrl}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${suite.a.apiKey}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(jobBody()),
  });

describe("the API's direct path", () => {
  it("answers a create with the headers Next gives every API answer, and HSTS behind a TLS proxy", async () => {
    const direct = await create();
    const text = await direct.text();
    expect(direct.status).toBe(201);
    expect(direct.headers.get("content-length")).toBe(String(Buffer.byteLength(text)));
    const viaNext = await fetch(`${suite.h.baseUrl}/api/v1/jobs`, { headers: { authorization: `Bearer ${suite.a.apiKey}` } });
    await viaNext.text();
    expect(viaNext.status).toBe(200);
    expect(viaNext.headers.get("content-length")).toBeNull();
    for (const name of SECURITY_HEADERS) expect([name, direct.headers.get(name)]).toEqual([name, viaNext.headers.get(name)]);
    expect(direct.headers.get("strict-transport-security")).toBeNull();

    const behindTls = await create({ "x-forwarded-proto": "https" });
    await behindTls.text();
    expect(behindTls.status).toBe(201);
    expect(behindTls.headers.get("strict-transport-security")).toMatch(/^max-age=\d{7,}/);
  });

  it("counts its answers in the console's API metrics", async () => {
    const count = async () => {
      const text = await (await fetch(`http://127.0.0.1:${suite.h.metricsPort}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("tick_api_requests_total{") && l.includes('route="createJob"') && l.includes('status="201"'));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const before = await count();
    for (let i = 0; i < 3; i++) expect((await create()).status).toBe(201);
    expect(await count()).toBe(before + 3);
  });

  it("refuses a chunked body past the limit with 413 and closes that connection; the next create is served", async () => {
    const url = new URL(suite.h.baseUrl);
    const answer = await new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, path: "/api/v1/jobs", method: "POST", headers: { authorization: `Bearer ${suite.a.apiKey}`, "content-type": "application/json" } },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
        },
      );
      req.on("error", reject);
      // No Content-Length: the limit is found while reading. 2 MiB of padding, 64 KiB at a time.
      req.write('{"target":{"url":"https://93.184.216.34/"},"metadata":{"pad":"');
      const chunk = "x".repeat(65_536);
      let sent = 0;
      const pump = () => {
        while (sent < 32) {
          sent++;
          if (!req.write(chunk)) return void req.once("drain", pump);
        }
        req.end('"}}');
      };
      pump();
    });
    expect(answer.status).toBe(413);
    expect(answer.connection).toBe("close");
    expect(JSON.parse(answer.body)).toMatchObject({ type: "https://tick.dev/problems/payload-too-large", status: 413 });
    expect((await create()).status).toBe(201);
  });
});
