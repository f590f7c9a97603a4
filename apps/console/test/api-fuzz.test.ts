import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { jobBody, type TestTenant, useConsole } from "./harness";

/**
 * Hostile input against every operation of the served OpenAPI document: no answer may be a 5xx, and every
 * 4xx must be a problem document with a `type`. Generated from the document, so a new route is fuzzed
 * without touching this file. For each operation it sends a body that is valid where it can be (the
 * schema's example, or a hand-written one where a schema alone cannot give a valid value), then replaces
 * one property at a time (nested ones too) with each hostile value; then each query and path parameter in
 * turn; then whole-body oddities (empty, not JSON, a scalar, 5,000 levels deep). API keys for tenant
 * operations, a platform operator's session for `platform` ones, a member's session for `account` ones.
 * Sequential: about 4,000 requests, 25 s on 2 cores.
 */

// Signing up, rather than being refused as closed, lets sign-up bodies reach the service.
const suite = useConsole({ TICK_SIGNUP: "open", TICK_MAIL_DIR: mkdtempSync(path.join(tmpdir(), "tick-mail-")) });

type Json = unknown;
type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: Schema | boolean;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: Json[];
  const?: Json;
  default?: Json;
  format?: string;
  minLength?: number;
  minimum?: number;
  minItems?: number;
};
type Parameter = { name: string; in: "path" | "query" | "header"; schema: Schema };
type Operation = { operationId: string; parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: Schema }> }; "x-required-scope"?: string };
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

// Raw JSON text, spliced in where a placeholder string stands (JSON.stringify cannot write 5,000 levels cheaply).
const DEEP_ARRAY = "[".repeat(5000) + "]".repeat(5000);
const DEEP_OBJECT = '{"a":'.repeat(5000) + "1" + "}".repeat(5000);
const RAW = new Map<string, string>([
  ["\u0001deep-array\u0001", DEEP_ARRAY],
  ["\u0001deep-object\u0001", DEEP_OBJECT],
]);
const rawPlaceholder = (text: string) => [...RAW].find(([, v]) => v === text)![0];

/** Values put in place of one body property. */
const HOSTILE_VALUES: [string, Json][] = [
  ["NUL", "a\u0000b"],
  ["lone high surrogate", "a\ud800b"],
  ["lone low surrogate", "\udc00"],
  ["CR/LF", "a\r\nb: c"],
  ["C0 and DEL", "a\u0001\u001b\u007fb"],
  ["100k characters", "x".repeat(100_000)],
  ["5,000-deep array", rawPlaceholder(DEEP_ARRAY)],
  ["5,000-deep object", rawPlaceholder(DEEP_OBJECT)],
  ["number", 12345],
  ["huge number", 1e308],
  ["object", {}],
  ["array", []],
  ["null", null],
  ["boolean", true],
];

/** Keys put into an object (the body itself, or a record such as metadata or headers). */
const HOSTILE_KEYS: [string, string][] = [
  ["NUL key", "k\u0000"],
  ["lone surrogate key", "k\ud800"],
  ["CR/LF key", "k\r\n"],
  ["__proto__ key", "__proto__"],
];

/** Whole bodies: [label, content-type, text]. */
const HOSTILE_BODIES: [string, string, string][] = [
  ["empty body", "application/json", ""],
  ["not JSON", "application/json", "{not json"],
  ["truncated JSON", "application/json", '{"a":'],
  ["JSON null", "application/json", "null"],
  ["JSON string with NUL", "application/json", '"\\u0000"'],
  ["JSON array", "application/json", "[]"],
  ["JSON number", "application/json", "1e999"],
  ["5,000-deep array", "application/json", DEEP_ARRAY],
  ["5,000-deep object", "application/json", DEEP_OBJECT],
  ["unclosed nesting", "application/json", "[".repeat(5000)],
  ["text/plain", "text/plain", "{}"],
  ["invalid UTF-8 (CESU surrogate bytes)", "application/json", '{"a":"\xed\xa0\x80"}'],
];

/** Raw (already percent-encoded) values for one query parameter. */
const HOSTILE_QUERY: string[] = ["%00", "a%00b", "%0d%0a", "%01", "%7f", "%09", "%ED%A0%80", "%C0%80", "%", "%zz", "x".repeat(8000), "abc", "-1", "1e400", ""];
/** Raw values for one path parameter (a segment: never a bare "/" or "." which would route elsewhere). */
const HOSTILE_PATH: string[] = ["%00", "a%00b", "%0d%0a", "%01", "%7f", "%25", "%F0%9F%98%80", "x".repeat(8000), "not-a-uuid", "00000000-0000-0000-0000-00000000000g", "%20"];
/**
 * Segments whose percent-encoding is not UTF-8. Next fails decoding them into the route's params before
 * any handler runs and answers a bare 500 (vercel/next.js#43303); only a proxy in front of /api/v1 can
 * answer them (see the last test).
 */
const UNDECODABLE_PATH: string[] = ["%ED%A0%80", "%C0%80", "%E0%A4%A", "%"];

let doc: Doc;
let f: TestTenant;
let operatorCookie: string;
/** A tenant member's console session, for `account` operations (the signed-in person's own). */
let memberCookie: string;
/** A real resource per path, so writes reach their service; throwaway ones where the operation destroys them. */
const realIds: Record<string, string> = {};
const failures: string[] = [];
let requests = 0;

function resolve(schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 10; i++) s = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")] ?? {};
  return s;
}

const typeOf = (s: Schema) => (Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type);

/** A value the schema accepts where the schema alone says enough (no patterns, no cross-field rules). */
function example(schema: Schema | undefined, depth = 0): Json {
  const s = resolve(schema);
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf;
  if (alt) return example(alt.find((a) => typeOf(resolve(a)) !== "null") ?? alt[0], depth);
  if (s.allOf) return example(s.allOf[0], depth);
  switch (typeOf(s)) {
    case "string":
      if (s.format === "uuid") return crypto.randomUUID();
      if (s.format === "date-time") return new Date(Date.now() + 3_600_000).toISOString();
      if (s.format === "email") return `fuzz-${crypto.randomUUID().slice(0, 8)}@example.test`;
      return "fuzz".padEnd(Math.max(4, s.minLength ?? 0), "z");
    case "integer":
    case "number":
      return s.minimum ?? 1;
    case "boolean":
      return true;
    case "array":
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => example(s.items, depth + 1));
    case "object": {
      if (depth > 6) return {};
      const out: Record<string, Json> = {};
      for (const name of s.required ?? []) out[name] = example(s.properties?.[name], depth + 1);
      return out;
    }
    default:
      return "fuzz";
  }
}

/** Bodies the schema cannot describe well enough (cron syntax, zones, URLs, run-at rules). */
function knownBody(operationId: string): Json {
  const target = { method: "POST", url: "https://93.184.216.34/fuzz", headers: { "x-fuzz": "1" }, body: "{}" };
  const bodies: Record<string, Json> = {
    createJob: jobBody(),
    createJobsBatch: { jobs: [jobBody()] },
    createSchedule: { name: `fuzz-${crypto.randomUUID().slice(0, 8)}`, cron: "*/5 * * * *", timezone: "Europe/Paris", paused: true, job: { target, metadata: { a: 1 } } },
    updateSchedule: { cron: "0 * * * *", timezone: "UTC", job: { target } },
    previewRule: { cron: "0 9 * * 1-5", timezone: "America/New_York", count: 3 },
    createWebhookEndpoint: { url: "https://93.184.216.34/fuzz-hook", events: ["job.dead"], description: "fuzz" },
    updateWebhookEndpoint: { url: "https://93.184.216.34/fuzz-hook-2", description: "fuzz" },
    updateQueue: { concurrency: 5 },
    updateSettings: { retentionDays: 30 },
    createQueue: { name: `fuzz-${crypto.randomUUID().slice(0, 8)}` },
    signUp: { tenantName: "Fuzz Inc", email: `fuzz-${crypto.randomUUID().slice(0, 8)}@example.test`, password: "correct horse battery" },
    acceptInvitation: { token: "x".repeat(40), password: "correct horse battery" },
    previewInvitation: { token: "x".repeat(40) },
    inviteMember: { email: `fuzz-${crypto.randomUUID().slice(0, 8)}@example.test`, role: "viewer" },
    updateMember: { role: "viewer" },
    createApiKey: { name: "fuzz", scopes: ["jobs:read"] },
    pauseDependency: { reason: "fuzz" },
    operatorSuspendTenant: { reason: "fuzz" },
    operatorUpdateTenant: { weight: 2 },
    redeliverWebhooks: { ids: [crypto.randomUUID()] },
  };
  return bodies[operationId];
}

/** Every property path of a body schema (nested objects and the first array item), with the record-like ones. */
function propertyPaths(schema: Schema | undefined, prefix: (string | number)[] = [], depth = 0): { paths: (string | number)[][]; records: (string | number)[][] } {
  const out = { paths: [] as (string | number)[][], records: [] as (string | number)[][] };
  if (depth > 4) return out;
  const s = resolve(schema);
  const alt = s.anyOf ?? s.oneOf;
  if (alt) {
    for (const a of alt) {
      const sub = propertyPaths(a, prefix, depth);
      out.paths.push(...sub.paths);
      out.records.push(...sub.records);
    }
    return out;
  }
  const kind = typeOf(s);
  if (kind === "object") {
    if (typeof s.additionalProperties === "object" || (!s.properties && s.additionalProperties !== false)) out.records.push(prefix);
    for (const [name, prop] of Object.entries(s.properties ?? {})) {
      out.paths.push([...prefix, name]);
      const sub = propertyPaths(prop, [...prefix, name], depth + 1);
      out.paths.push(...sub.paths);
      out.records.push(...sub.records);
    }
    if (typeof s.additionalProperties === "object") out.paths.push([...prefix, "fuzz-key"]);
  } else if (kind === "array") {
    out.paths.push([...prefix, 0]);
    const sub = propertyPaths(s.items, [...prefix, 0], depth + 1);
    out.paths.push(...sub.paths);
    out.records.push(...sub.records);
  }
  return out;
}

function withValue(base: Json, path: (string | number)[], value: Json): Json {
  const root = structuredClone(base) as Record<string | number, Json>;
  let node: Record<string | number, Json> = root;
  for (const [i, key] of path.entries()) {
    if (i === path.length - 1) {
      node[key] = value;
      break;
    }
    const next = node[key];
    node[key] = next && typeof next === "object" ? next : typeof path[i + 1] === "number" ? [] : {};
    node = node[key] as Record<string | number, Json>;
  }
  return root;
}

function withKey(base: Json, path: (string | number)[], key: string): Json {
  const root = structuredClone(base) as Record<string, Json>;
  let node: Json = root;
  for (const k of path) node = (node as Record<string | number, Json>)[k] ?? {};
  if (node && typeof node === "object" && !Array.isArray(node)) {
    // defineProperty: a plain assignment of "__proto__" would set the prototype, not a key.
    Object.defineProperty(node, key, { value: "v", enumerable: true, configurable: true, writable: true });
  }
  return root;
}

function toText(body: Json): string {
  let text = JSON.stringify(body);
  for (const [placeholder, raw] of RAW) text = text.replaceAll(JSON.stringify(placeholder), raw);
  return text;
}

const describeInput = (text: string) => (text.length > 160 ? `${text.slice(0, 120)}… (${text.length} chars)` : text);

async function send(method: string, url: string, scope: string | undefined, input: string, body?: { type: string; text: string | Uint8Array<ArrayBuffer> }): Promise<number> {
  const headers: Record<string, string> =
    scope === "platform"
      ? { cookie: operatorCookie, origin: suite.h.baseUrl }
      : scope === "account"
        ? { cookie: memberCookie, origin: suite.h.baseUrl }
        : scope === undefined
          ? {}
          : { authorization: `Bearer ${f.apiKey}` };
  if (body) headers["content-type"] = body.type;
  requests++;
  let res: Response;
  try {
    res = await fetch(`${suite.h.baseUrl}/api/v1${url}`, { method: method.toUpperCase(), headers, body: body?.text });
  } catch (err) {
    failures.push(`${method.toUpperCase()} ${url.slice(0, 200)} [${input}]: no answer (${(err as Error).message})`);
    return 0;
  }
  const text = await res.text();
  const label = `${method.toUpperCase()} ${url.length > 200 ? `${url.slice(0, 200)}…` : url} [${input}] → ${res.status}`;
  if (res.status >= 500) {
    failures.push(`${label}: ${text.slice(0, 200)}`);
    return res.status;
  }
  if (res.status >= 400) {
    const type = res.headers.get("content-type") ?? "";
    let problem: { type?: unknown } | null = null;
    try {
      problem = JSON.parse(text) as { type?: unknown };
    } catch {
      problem = null;
    }
    if (!type.startsWith("application/problem+json") || typeof problem?.type !== "string" || !problem.type.startsWith("https://tick.dev/problems/")) {
      failures.push(`${label}: not a problem document (${type}): ${text.slice(0, 200)}`);
    }
  }
  return res.status;
}

const fillPath = (path: string, values: Record<string, string>) => path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? crypto.randomUUID());

beforeAll(async () => {
  const h = suite.h;
  doc = (await (await fetch(`${h.baseUrl}/api/v1/openapi.json`)).json()) as Doc;
  // Generous limits: hostile values that happen to be valid create jobs, and admission must not hide the rest.
  f = await h.createTenant({ admissionRate: 100_000, admissionBurst: 100_000, maxPendingJobs: 1_000_000 });
  const victim = await h.createTenant();
  const operator = await h.addUser(suite.a.id, "viewer");
  await h.prisma.user.update({ where: { id: operator.id }, data: { platformOperator: true } });
  operatorCookie = await h.signIn(operator.email, operator.password);
  const person = await h.addUser(f.id, "owner");
  memberCookie = await h.signIn(person.email, person.password);

  const api = h.client(f.apiKey);
  const job = await api.call("createJob", { body: jobBody() });
  const schedule = await api.call("createSchedule", {
    body: { name: "fuzz", cron: "*/5 * * * *", timezone: "Europe/Paris", paused: true, job: { target: { method: "POST", url: "https://93.184.216.34/s" } } },
  });
  const endpoint = await api.call("createWebhookEndpoint", { body: { url: "https://93.184.216.34/hook", events: ["job.dead"] } });
  const invitation = await api.call("inviteMember", { body: { email: "invitee@example.test", role: "viewer" } });
  if (!job.ok || !schedule.ok || !endpoint.ok || !invitation.ok) throw new Error("fixture setup failed");
  const member = await h.addUser(f.id, "viewer");
  const key = await h.addKey(f.id, ["jobs:read"]);
  Object.assign(realIds, {
    "/jobs/{id}": job.body.id,
    "/jobs/{id}/cancel": job.body.id,
    "/schedules/{id}": schedule.body.id,
    "/schedules/{id}/pause": schedule.body.id,
    "/schedules/{id}/resume": schedule.body.id,
    "/schedules/{id}/preview": schedule.body.id,
    "/webhooks/endpoints/{id}": endpoint.body.id,
    "/webhooks/endpoints/{id}/test": endpoint.body.id,
    "/invitations/{id}/revoke": invitation.body.invitation.id,
    "/members/{id}": member.id,
    "/keys/{id}/revoke": key.keyId,
    "/operator/tenants/{id}": victim.id,
    "/operator/tenants/{id}/suspend": victim.id,
    "/operator/tenants/{id}/resume": victim.id,
  });
});

describe("fuzzing every operation of the OpenAPI document", () => {
  it("answers no hostile input with a 5xx, and every 4xx with a problem document", { timeout: 300_000 }, async () => {
    const started = performance.now();
    const operations = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })))
      // Destructive operations last, so the resources they remove serve the others first.
      .sort((x, y) => Number(x.method === "delete" || /revoke|suspend/.test(x.path)) - Number(y.method === "delete" || /revoke|suspend/.test(y.path)));
    expect(operations.length).toBeGreaterThanOrEqual(50);
    let fuzzedBodies = 0;
    let fuzzedQueries = 0;
    let fuzzedParams = 0;
    const baselines: string[] = [];

    for (const { path, method, op } of operations) {
      if (op.operationId === "openapi") continue;
      const scope = op["x-required-scope"];
      const pathParams = (op.parameters ?? []).filter((p) => p.in === "path");
      const queryParams = (op.parameters ?? []).filter((p) => p.in === "query");
      const realValues: Record<string, string> = Object.fromEntries(
        pathParams.map((p) => [p.name, p.name === "name" ? "default" : p.name === "key" ? "93.184.216.34" : (realIds[path] ?? crypto.randomUUID())]),
      );
      const url = fillPath(path, Object.fromEntries(Object.entries(realValues).map(([k, v]) => [k, encodeURIComponent(v)])));
      const bodySchema = op.requestBody?.content["application/json"]?.schema;
      const base = bodySchema ? (knownBody(op.operationId) ?? example(bodySchema)) : undefined;
      const jsonBody = (value: Json) => ({ type: "application/json", text: toText(value) });

      // One property at a time.
      if (bodySchema) {
        fuzzedBodies++;
        baselines.push(`${op.operationId} ${await send(method, url, scope, "baseline", jsonBody(base))}`);
        const { paths, records } = propertyPaths(bodySchema);
        for (const p of paths) {
          for (const [label, value] of HOSTILE_VALUES) {
            await send(method, url, scope, `body ${p.join(".")} = ${label}`, jsonBody(withValue(base, p, value)));
          }
        }
        for (const r of [[], ...records]) {
          for (const [label, key] of HOSTILE_KEYS) await send(method, url, scope, `body ${r.join(".") || "(root)"} gets a ${label}`, jsonBody(withKey(base, r, key)));
        }
        for (const [label, type, text] of HOSTILE_BODIES) {
          await send(method, url, scope, label, { type, text: label.startsWith("invalid UTF-8") ? new Uint8Array(Buffer.from(text, "latin1")) : text });
        }
      }
      const body = base === undefined ? undefined : jsonBody(base);

      for (const q of queryParams) {
        fuzzedQueries++;
        for (const value of HOSTILE_QUERY) await send(method, `${url}?${q.name}=${value}`, scope, `query ${q.name}=${describeInput(value)}`, body);
        await send(method, `${url}?${q.name}=1&${q.name}=2`, scope, `query ${q.name} twice`, body);
      }
      for (const p of pathParams) {
        fuzzedParams++;
        for (const value of HOSTILE_PATH) {
          const hostileUrl = fillPath(path, { ...Object.fromEntries(Object.entries(realValues).map(([k, v]) => [k, encodeURIComponent(v)])), [p.name]: value });
          await send(method, hostileUrl, scope, `path ${p.name}=${describeInput(value)}`, body);
        }
      }
      // Without credentials (public operations: with none needed).
      if (body) await send(method, url, undefined, "no credentials", body);
    }

    const seconds = (performance.now() - started) / 1000;
    console.log(
      `api-fuzz: ${operations.length} operations (${fuzzedBodies} with a body, ${fuzzedQueries} query and ${fuzzedParams} path parameters), ${requests} requests in ${seconds.toFixed(1)} s`,
    );
    console.log(`api-fuzz: the unaltered bodies were answered ${baselines.join(", ")}`);
    expect(failures.slice(0, Number(process.env.FUZZ_SHOW ?? 60)).join("\n") + (failures.length > Number(process.env.FUZZ_SHOW ?? 60) ? `\n… and ${failures.length - Number(process.env.FUZZ_SHOW ?? 60)} more` : "")).toBe("");
    expect(failures).toHaveLength(0);
  });

  // Outside the API pipeline: src/proxy.ts answers undecodable /api paths before Next decodes them.
  it("answers path segments that are not UTF-8 with a problem, not Next's bare 500", async () => {
    failures.length = 0;
    for (const value of UNDECODABLE_PATH) {
      await send("get", `/jobs/${value}`, "jobs:read", `path id=${value}`);
      await send("post", `/dependencies/${value}/resume`, "queues:write", `path key=${value}`);
    }
    expect(failures).toEqual([]);
  });
});
