import Link from "next/link";
import type { ReactNode } from "react";
import { isObject, Prose, RefLink, refName, schemaAnchor, SchemaSummary, SchemaView, type JsonObject } from "./json-schema-view";

/**
 * A readable, static rendering of an OpenAPI 3.1 document: a sidebar of operations grouped by the first
 * path segment, one card per operation, and every component schema at the bottom (`#schema-<Name>`).
 * The document is walked as `unknown` and narrowed, so a field it lacks renders as absent, not as a crash.
 */

const HTTP_METHODS = ["get", "put", "post", "patch", "delete", "head", "options", "trace"] as const;

interface ParameterInfo {
  name: string;
  in: string;
  required: boolean;
  description?: string;
  schema: unknown;
}

interface MediaInfo {
  mediaType: string;
  schema: unknown;
}

interface HeaderInfo {
  name: string;
  description?: string;
  schema: unknown;
}

interface ResponseInfo {
  status: string;
  description: string;
  problemTypes: string[];
  headers: HeaderInfo[];
  content: MediaInfo[];
}

interface OperationInfo {
  id: string;
  method: string;
  path: string;
  group: string;
  summary: string;
  description?: string;
  scope?: string;
  parameters: ParameterInfo[];
  requestBody?: { required: boolean; content: MediaInfo[] };
  responses: ResponseInfo[];
}

export interface ReferenceModel {
  title: string;
  version: string;
  openapi: string;
  description?: string;
  baseUrl: string;
  bearerFormat?: string;
  groups: { name: string; operations: OperationInfo[] }[];
  schemas: [string, JsonObject][];
}

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const obj = (value: unknown): JsonObject => (isObject(value) ? value : {});

function readContent(content: unknown): MediaInfo[] {
  return Object.entries(obj(content)).map(([mediaType, media]) => ({ mediaType, schema: obj(media).schema }));
}

function readParameter(raw: unknown): ParameterInfo | undefined {
  if (!isObject(raw)) return undefined;
  const name = str(raw.name);
  const where = str(raw.in);
  if (!name || !where) return undefined;
  return { name, in: where, required: raw.required === true, description: str(raw.description), schema: raw.schema };
}

function readResponse(status: string, raw: unknown): ResponseInfo {
  const response = obj(raw);
  const problemTypes = response["x-problem-types"];
  return {
    status,
    description: str(response.description) ?? "",
    problemTypes: Array.isArray(problemTypes) ? problemTypes.filter((t): t is string => typeof t === "string") : [],
    headers: Object.entries(obj(response.headers)).map(([name, header]) => ({
      name,
      description: str(obj(header).description),
      schema: obj(header).schema,
    })),
    content: readContent(response.content),
  };
}

function readOperation(path: string, method: string, raw: JsonObject): OperationInfo {
  const id = str(raw.operationId) ?? `${method}-${path}`.replace(/[^A-Za-z0-9_-]+/g, "-");
  const body = isObject(raw.requestBody) ? raw.requestBody : undefined;
  return {
    id,
    method,
    path,
    group: path.split("/").find((segment) => segment.length > 0) ?? "other",
    summary: str(raw.summary) ?? id,
    description: str(raw.description),
    scope: str(raw["x-required-scope"]),
    parameters: (Array.isArray(raw.parameters) ? raw.parameters : [])
      .map(readParameter)
      .filter((p): p is ParameterInfo => p !== undefined),
    requestBody: body ? { required: body.required === true, content: readContent(body.content) } : undefined,
    responses: Object.entries(obj(raw.responses))
      .map(([status, response]) => readResponse(status, response))
      .sort((a, b) => a.status.localeCompare(b.status)),
  };
}

/** Narrows the document into what the page shows; groups keep the order of first appearance. */
function readReference(document: unknown): ReferenceModel {
  const doc = obj(document);
  const info = obj(doc.info);
  const groups = new Map<string, OperationInfo[]>();
  for (const [path, item] of Object.entries(obj(doc.paths))) {
    for (const method of HTTP_METHODS) {
      const raw = obj(item)[method];
      if (!isObject(raw)) continue;
      const operation = readOperation(path, method, raw);
      groups.set(operation.group, [...(groups.get(operation.group) ?? []), operation]);
    }
  }
  const servers = Array.isArray(doc.servers) ? doc.servers : [];
  const components = obj(doc.components);
  const bearer = Object.values(obj(components.securitySchemes)).map(obj).find((s) => s.scheme === "bearer");
  return {
    title: str(info.title) ?? "API",
    version: str(info.version) ?? "",
    openapi: str(doc.openapi) ?? "",
    description: str(info.description),
    baseUrl: str(obj(servers[0]).url) ?? "/",
    bearerFormat: str(bearer?.bearerFormat),
    groups: [...groups].map(([name, operations]) => ({ name, operations })),
    schemas: Object.entries(obj(components.schemas)).filter((e): e is [string, JsonObject] => isObject(e[1])),
  };
}

const METHOD_STYLES: Record<string, string> = {
  get: "bg-sky-100 text-sky-800 ring-sky-200",
  post: "bg-emerald-100 text-emerald-800 ring-emerald-200",
  put: "bg-violet-100 text-violet-800 ring-violet-200",
  patch: "bg-amber-100 text-amber-800 ring-amber-200",
  delete: "bg-rose-100 text-rose-800 ring-rose-200",
};

function MethodBadge({ method, small = false }: { method: string; small?: boolean }) {
  const size = small ? "w-12 px-1 text-[10px]" : "px-2 py-0.5 text-xs";
  return (
    <span data-testid={small ? undefined : "operation-method"}
      className={`inline-block shrink-0 rounded text-center font-mono font-semibold ring-1 ring-inset ${size} ${METHOD_STYLES[method] ?? "bg-slate-100 text-slate-700 ring-slate-200"}`}>
      {method.toUpperCase()}
    </span>
  );
}

function statusStyle(status: string): string {
  if (status.startsWith("2")) return "bg-emerald-50 text-emerald-700 ring-emerald-200";
  if (status.startsWith("3")) return "bg-sky-50 text-sky-700 ring-sky-200";
  if (status.startsWith("4")) return "bg-amber-50 text-amber-800 ring-amber-200";
  if (status.startsWith("5")) return "bg-rose-50 text-rose-700 ring-rose-200";
  return "bg-slate-100 text-slate-700 ring-slate-200";
}

/** The path with its {placeholders} highlighted. */
function PathText({ path }: { path: string }) {
  return (
    <code data-testid="operation-path" className="break-all font-mono text-sm text-slate-900">
      {path.split(/(\{[^}]+\})/).map((part, i) =>
        part.startsWith("{") ? <span key={i} className="text-indigo-600">{part}</span> : <span key={i}>{part}</span>,
      )}
    </code>
  );
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function Sidebar({ model }: { model: ReferenceModel }) {
  const linkClass = "block rounded-md px-2 py-1 hover:bg-slate-100";
  return (
    <nav aria-label="API reference" className="text-sm md:sticky md:top-6 md:max-h-[calc(100vh-3rem)] md:self-start md:overflow-y-auto">
      <a href="#overview" className={`${linkClass} font-medium`}>Overview</a>
      {model.groups.map((group) => (
        <div key={group.name} className="mt-4">
          <a href={`#group-${group.name}`} className="px-2 text-xs font-semibold uppercase tracking-wide text-slate-500 hover:text-slate-900">
            {group.name}
          </a>
          <ul className="mt-1">
            {group.operations.map((op) => (
              <li key={op.id}>
                <a href={`#${op.id}`} className={`${linkClass} flex items-center gap-2`} title={op.summary}>
                  <MethodBadge method={op.method} small />
                  <span className="truncate font-mono text-xs text-slate-700">{op.path}</span>
                </a>
              </li>
            ))}
          </ul>
        </div>
      ))}
      <div className="mt-4">
        <a href="#schemas" className="px-2 text-xs font-semibold uppercase tracking-wide text-slate-500 hover:text-slate-900">Schemas</a>
        <ul className="mt-1">
          {model.schemas.map(([name]) => (
            <li key={name}>
              <a href={`#${schemaAnchor(name)}`} className={`${linkClass} font-mono text-xs text-slate-700`}>{name}</a>
            </li>
          ))}
        </ul>
      </div>
    </nav>
  );
}

function Card({ id, title, children }: { id?: string; title: ReactNode; children: ReactNode }) {
  return (
    <div id={id} className="scroll-mt-6 rounded-xl border border-slate-200 bg-white p-5">
      <h3 className="mb-2 text-sm font-medium text-slate-500">{title}</h3>
      {children}
    </div>
  );
}

function curlExample(baseUrl: string): string {
  return [
    `curl -X POST "$TICK_URL${baseUrl}/jobs" \\`,
    `  -H "Authorization: Bearer $TICK_API_KEY" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -H "Idempotency-Key: invoice-4711-reminder" \\`,
    `  -d '{"target": {"url": "https://example.com/hooks/remind", "method": "POST"}, "delayMs": 60000}'`,
  ].join("\n");
}

function Overview({ model }: { model: ReferenceModel }) {
  return (
    <section id="overview" aria-labelledby="overview-title" className="scroll-mt-6 space-y-4">
      <h2 id="overview-title" className="sr-only">Overview</h2>
      {model.description ? <p className="text-sm leading-relaxed text-slate-700"><Prose text={model.description} /></p> : null}
      <div className="grid gap-4 sm:grid-cols-3">
        <Card title="Base URL">
          <code data-testid="base-url" className="font-mono text-sm">{model.baseUrl}</code>
          <p className="mt-1 text-xs text-slate-500">Relative to the console&apos;s origin.</p>
        </Card>
        <Card title="Authentication">
          <code className="font-mono text-sm">Authorization: Bearer &lt;key&gt;</code>
          <p className="mt-1 text-xs text-slate-500">
            {model.bearerFormat ? <>Keys look like <code className="font-mono">{model.bearerFormat}</code>. </> : null}
            Each operation names the scope it needs; <code className="font-mono">admin</code> holds all.
          </p>
        </Card>
        <Card title="OpenAPI document">
          <a href={`${model.baseUrl}/openapi.json`} className="font-mono text-sm text-indigo-600 hover:underline">
            {model.baseUrl}/openapi.json
          </a>
          <p className="mt-1 text-xs text-slate-500">OpenAPI {model.openapi}, generated from the request validators.</p>
        </Card>
      </div>
      <Card title="Example: create a job, safely retryable">
        <pre className="overflow-x-auto rounded-lg bg-slate-900 p-4 font-mono text-xs leading-relaxed text-slate-100">
          <code>{curlExample(model.baseUrl)}</code>
        </pre>
        <p className="mt-2 text-xs text-slate-500">
          201 returns the <RefLink name="Job" />. Sending the same request with the same Idempotency-Key returns the
          original job with 200 and <code className="font-mono">Idempotent-Replayed: true</code>; errors are{" "}
          <code className="font-mono">application/problem+json</code> documents (<RefLink name="Problem" />) whose{" "}
          <code className="font-mono">type</code> is stable.
        </p>
      </Card>
    </section>
  );
}

function SubHeading({ children }: { children: ReactNode }) {
  return <h4 className="mb-2 mt-5 text-xs font-semibold uppercase tracking-wide text-slate-500">{children}</h4>;
}

function ParametersTable({ parameters }: { parameters: ParameterInfo[] }) {
  return (
    <div className="overflow-x-auto">
      <table className="w-full min-w-[40rem] text-left text-sm">
        <thead className="border-b border-slate-200 text-xs text-slate-500">
          <tr>
            <th className="py-1.5 pr-4 font-medium">Name</th>
            <th className="py-1.5 pr-4 font-medium">In</th>
            <th className="py-1.5 pr-4 font-medium">Required</th>
            <th className="py-1.5 pr-4 font-medium">Type</th>
            <th className="py-1.5 font-medium">Description</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100 align-top">
          {parameters.map((p) => (
            <tr key={`${p.in}:${p.name}`}>
              <td className="py-2 pr-4 font-mono font-medium">{p.name}</td>
              <td className="py-2 pr-4 text-slate-600">{p.in}</td>
              <td className="py-2 pr-4">{p.required ? <span className="text-rose-600">yes</span> : <span className="text-slate-600">no</span>}</td>
              <td className="py-2 pr-4"><SchemaSummary schema={p.schema} /></td>
              <td className="py-2 text-slate-600">{p.description ? <Prose text={p.description} /> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A body's media type and schema. A top-level reference is shown as a link and, when `expand` is set,
 * the referenced component's own fields follow (one level: references inside stay links).
 */
function BodySchema({ media, schemas, expand, open }: { media: MediaInfo; schemas: Map<string, JsonObject>; expand: boolean; open: boolean }) {
  const name = refName(media.schema);
  const target = name ? schemas.get(name) : undefined;
  return (
    <div className="mt-2 text-sm">
      <p className="flex flex-wrap items-center gap-2">
        <span className="font-mono text-xs text-slate-500">{media.mediaType}</span>
        {name ? <RefLink name={name} /> : null}
      </p>
      {name && target && expand ? (
        <details open={open} className="mt-2 rounded-lg border border-slate-200 px-3 py-2">
          <summary className="cursor-pointer text-xs text-slate-500 hover:text-slate-900">Fields of {name}</summary>
          <div className="mt-2"><SchemaView schema={target} depth={1} /></div>
        </details>
      ) : null}
      {!name ? <div className="mt-2 rounded-lg border border-slate-200 px-3 py-2"><SchemaView schema={media.schema} /></div> : null}
    </div>
  );
}

function ResponseItem({ response, schemas }: { response: ResponseInfo; schemas: Map<string, JsonObject> }) {
  const success = response.status.startsWith("2");
  return (
    <li className="py-3" data-status={response.status}>
      <div className="flex flex-wrap items-baseline gap-3">
        <span className={`rounded px-2 py-0.5 font-mono text-xs font-semibold ring-1 ring-inset ${statusStyle(response.status)}`}>{response.status}</span>
        <span className="text-sm text-slate-800">{response.description}</span>
      </div>
      <div className="ml-1 mt-1 space-y-1 pl-12">
        {response.problemTypes.length ? (
          <ul className="space-y-0.5" aria-label={`Problem types for ${response.status}`}>
            {response.problemTypes.map((type) => (
              <li key={type} className="break-all font-mono text-xs text-slate-600">{type}</li>
            ))}
          </ul>
        ) : null}
        {response.headers.map((h) => (
          <p key={h.name} className="flex flex-wrap items-center gap-2 text-xs text-slate-600">
            <span>Header <code className="font-mono font-medium text-slate-800">{h.name}</code></span>
            <SchemaSummary schema={h.schema} />
            {h.description ? <span>— {h.description}</span> : null}
          </p>
        ))}
        {response.content.map((media) => (
          <BodySchema key={media.mediaType} media={media} schemas={schemas} expand={success} open={false} />
        ))}
      </div>
    </li>
  );
}

function OperationCard({ op, schemas }: { op: OperationInfo; schemas: Map<string, JsonObject> }) {
  return (
    <section id={op.id} aria-labelledby={`${op.id}-title`} data-operation-id={op.id}
      className="scroll-mt-6 rounded-xl border border-slate-200 bg-white p-5">
      <div className="flex flex-wrap items-center gap-3">
        <MethodBadge method={op.method} />
        <PathText path={op.path} />
        {op.scope ? (
          <span className="ml-auto text-xs text-slate-500">
            scope <code data-testid="required-scope" className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-slate-800">{op.scope}</code>
          </span>
        ) : null}
      </div>
      <h3 id={`${op.id}-title`} className="mt-3 text-lg font-medium">{op.summary}</h3>
      {op.description ? <p className="mt-1 text-sm leading-relaxed text-slate-600"><Prose text={op.description} /></p> : null}

      {op.parameters.length ? (
        <>
          <SubHeading>Parameters</SubHeading>
          <ParametersTable parameters={op.parameters} />
        </>
      ) : null}

      {op.requestBody ? (
        <>
          <SubHeading>Request body{op.requestBody.required ? <span className="ml-1.5 normal-case text-rose-600">required</span> : null}</SubHeading>
          {op.requestBody.content.map((media) => (
            <BodySchema key={media.mediaType} media={media} schemas={schemas} expand open />
          ))}
        </>
      ) : null}

      <SubHeading>Responses</SubHeading>
      <ul className="divide-y divide-slate-100">
        {op.responses.map((response) => <ResponseItem key={response.status} response={response} schemas={schemas} />)}
      </ul>
    </section>
  );
}

function SchemaCard({ name, schema }: { name: string; schema: JsonObject }) {
  const description = typeof schema.description === "string" ? schema.description : undefined;
  return (
    <section id={schemaAnchor(name)} aria-labelledby={`${schemaAnchor(name)}-title`}
      className="scroll-mt-6 rounded-xl border border-slate-200 bg-white p-5">
      <h3 id={`${schemaAnchor(name)}-title`} className="font-mono text-base font-semibold">{name}</h3>
      {description ? <p className="mt-1 text-sm text-slate-600"><Prose text={description} /></p> : null}
      <div className="mt-3"><SchemaView schema={{ ...schema, description: undefined }} /></div>
    </section>
  );
}

export function OpenApiReference({ document }: { document: unknown }) {
  const model = readReference(document);
  const schemas = new Map(model.schemas);
  return (
    <>
      <header className="mb-8 flex flex-wrap items-end justify-between gap-4">
        <div>
          <p className="text-sm text-slate-500"><Link href="/" className="hover:text-slate-900 hover:underline">Tick console</Link> / Docs</p>
          <h1 className="text-2xl font-semibold">{model.title} reference</h1>
          <p className="text-sm text-slate-500">Version {model.version} · OpenAPI {model.openapi}</p>
        </div>
        <a href={`${model.baseUrl}/openapi.json`}
          className="rounded-md border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-100">
          Raw JSON
        </a>
      </header>
      <div className="grid gap-8 md:grid-cols-[14rem_minmax(0,1fr)]">
        <Sidebar model={model} />
        <div className="min-w-0 space-y-12">
          <Overview model={model} />
          {model.groups.map((group) => (
            <section key={group.name} id={`group-${group.name}`} aria-labelledby={`group-${group.name}-title`} className="scroll-mt-6 space-y-4">
              <h2 id={`group-${group.name}-title`} className="text-xl font-semibold">{capitalize(group.name)}</h2>
              {group.operations.map((op) => <OperationCard key={op.id} op={op} schemas={schemas} />)}
            </section>
          ))}
          <section id="schemas" aria-labelledby="schemas-title" className="scroll-mt-6 space-y-4">
            <h2 id="schemas-title" className="text-xl font-semibold">Schemas</h2>
            {model.schemas.map(([name, schema]) => <SchemaCard key={name} name={name} schema={schema} />)}
          </section>
        </div>
      </div>
    </>
  );
}
