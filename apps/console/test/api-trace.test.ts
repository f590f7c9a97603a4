import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

// Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT): the console records no span, but every job keeps a trace.
const suite = useConsole();

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

interface JobTrace {
  traceId: string;
  traceparent: string;
  tracestate: string | null;
}

async function create(headers: Record<string, string>, body: unknown = jobBody()) {
  const res = await fetch(`${suite.h.baseUrl}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${suite.a.apiKey}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { id: string; trace: JobTrace | null; type?: string; errors?: { path: string }[] } };
}

describe("a job's trace (W3C Trace Context) with tracing off", () => {
  it("keeps the creating request's traceparent and tracestate as they came, and shows them on GET /jobs/{id}", async () => {
    const created = await create({ traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7" });
    expect(created.status).toBe(201);
    const expected = { traceId: TRACE, traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7" };
    expect(created.body.trace).toEqual(expected);
    const read = await suite.h.client(suite.a.apiKey).call("getJob", { params: { id: created.body.id } });
    if (!read.ok) throw new Error(JSON.stringify(read.problem));
    expect(read.body.trace).toEqual(expected);
  });

  it("keeps an unsampled caller's flag", async () => {
    const created = await create({ traceparent: `00-${TRACE}-${PARENT}-00` });
    expect(created.body.trace).toMatchObject({ traceparent: `00-${TRACE}-${PARENT}-00`, tracestate: null });
  });

  it("a higher version's traceparent is read as version 00", async () => {
    const created = await create({ traceparent: `01-${TRACE}-${PARENT}-01-later-fields` });
    expect(created.body.trace?.traceparent).toBe(`00-${TRACE}-${PARENT}-01`);
  });

  it.each([
    ["malformed", "00-not-a-trace"],
    ["uppercase", `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ["all-zero trace ID", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["version ff", `ff-${TRACE}-${PARENT}-01`],
  ])("ignores a %s traceparent (201, and the job starts a new sampled trace)", async (_, traceparent) => {
    const created = await create({ traceparent, tracestate: "rojo=1" });
    expect(created.status).toBe(201);
    const trace = created.body.trace!;
    expect(trace.traceparent).toMatch(TRACEPARENT);
    expect(trace.traceparent.endsWith("-01")).toBe(true);
    expect(trace.traceId).not.toBe(TRACE);
    expect(trace.traceId).toBe(TRACEPARENT.exec(trace.traceparent)![1]);
    // The tracestate belongs to the ignored trace: dropped with it.
    expect(trace.tracestate).toBeNull();
  });

  it("drops an invalid tracestate but keeps a valid traceparent", async () => {
    const created = await create({ traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: "Not Valid" });
    expect(created.body.trace).toEqual({ traceId: TRACE, traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: null });
  });

  it("without a traceparent each job starts its own trace", async () => {
    const [a, b] = [await create({}), await create({})];
    expect(a.body.trace?.traceparent).toMatch(TRACEPARENT);
    expect(b.body.trace?.traceparent).toMatch(TRACEPARENT);
    expect(a.body.trace!.traceId).not.toBe(b.body.trace!.traceId);
  });

  it("a batch: every job joins the request's trace; without one each job has its own", async () => {
    const batch = async (headers: Record<string, string>) => {
      const res = await fetch(`${suite.h.baseUrl}/api/v1/jobs/batch`, {
        method: "POST",
        headers: { authorization: `Bearer ${suite.a.apiKey}`, "content-type": "application/json", ...headers },
        body: JSON.stringify({ jobs: [jobBody(), jobBody(), jobBody()] }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { results: { job: { trace: JobTrace } }[] }).results.map((r) => r.job.trace);
    };
    const joined = await batch({ traceparent: `00-${TRACE}-${PARENT}-01` });
    expect(joined.map((t) => t.traceparent)).toEqual(Array(3).fill(`00-${TRACE}-${PARENT}-01`));
    const own = await batch({});
    expect(new Set(own.map((t) => t.traceId)).size).toBe(3);
  });

  it("refuses traceparent and tracestate among a job's target headers: they are sent on the create request", async () => {
    for (const name of ["traceparent", "TraceState"]) {
      const created = await create({}, jobBody({ target: { method: "POST", url: "https://93.184.216.34/x", headers: { [name]: "x" } } }));
      expect(created.status).toBe(422);
      expect(created.body.errors?.map((e) => e.path)).toEqual([`target.headers.${name}`]);
    }
  });

  it("through the typed client too (its responses are checked against the OpenAPI document)", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    expect(created.body.trace?.traceparent).toMatch(TRACEPARENT);
    const listed = await client.call("listJobs", { query: {} });
    if (!listed.ok) throw new Error("list failed");
    expect(listed.body.data.every((j) => j.trace === null || TRACEPARENT.test(j.trace.traceparent))).toBe(true);
  });
});

itConformsToOpenApi(suite, 2);
