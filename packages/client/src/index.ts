import type { z } from "zod";
import { routes, type ProblemBody, type RouteName, type Routes } from "@tick/contract";

type Route<N extends RouteName> = Routes[N];
type Input<T> = T extends z.ZodType ? z.input<T> : never;
type Output<T> = T extends z.ZodType ? z.output<T> : never;
type SuccessBody<N extends RouteName> = {
  [S in keyof Route<N>["responses"]]: Route<N>["responses"][S] extends { contentType: "application/x-ndjson" }
    ? string // NDJSON, as text: one line per schema item
    : Route<N>["responses"][S] extends { schema: infer Sch }
      ? Output<Sch>
      : undefined;
}[keyof Route<N>["responses"]];

export type CallArgs<N extends RouteName> = (Route<N> extends { params: infer P } ? { params: Input<P> } : { params?: never }) &
  (Route<N> extends { query: infer Q } ? { query?: Partial<Record<keyof Input<Q>, string | number>> } : { query?: never }) &
  // Any body, not only Input<B>: tests send invalid ones on purpose, and the server validates.
  (Route<N> extends { body: unknown } ? { body: unknown } : { body?: never }) & {
    idempotencyKey?: string;
    headers?: Record<string, string>;
  };

export type ApiResult<N extends RouteName> =
  | { ok: true; status: number; headers: Headers; body: SuccessBody<N> }
  | { ok: false; status: number; headers: Headers; problem: ProblemBody };

export interface ResponseRecord {
  route: RouteName;
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  body: unknown;
}

export interface TickClientOptions {
  /** Console origin, e.g. http://127.0.0.1:3000 (the client adds /api/v1). */
  baseUrl: string;
  /** Omit in the console's own pages: the session cookie authenticates, with the user's role. */
  apiKey?: string;
  /** Sent with every request (e.g. `tick-tenant` to pick one of a console user's tenants). */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /** Called with every response (tests validate each one against the OpenAPI document). */
  onResponse?: (record: ResponseRecord) => void;
}

/** A typed client: `call("createJob", { body, idempotencyKey })` and friends, one per contract route. */
export function createTickClient(options: TickClientOptions) {
  const doFetch = options.fetch ?? globalThis.fetch;
  const base = options.baseUrl.replace(/\/$/, "") + "/api/v1";

  async function call<N extends RouteName>(name: N, args: CallArgs<N> = {} as CallArgs<N>): Promise<ApiResult<N>> {
    const route = routes[name];
    const a = args as { params?: Record<string, string>; query?: Record<string, string | number | undefined>; body?: unknown; idempotencyKey?: string; headers?: Record<string, string> };
    const path = route.path.replace(/\{(\w+)\}/g, (_, key: string) => encodeURIComponent(String(a.params?.[key] ?? "")));
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(a.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      accept: "application/json",
      ...options.headers,
      ...a.headers,
    };
    if (a.body !== undefined) headers["content-type"] = "application/json";
    if (a.idempotencyKey !== undefined) headers["idempotency-key"] = a.idempotencyKey;
    const res = await doFetch(url, {
      method: route.method.toUpperCase(),
      headers,
      ...(a.body !== undefined ? { body: JSON.stringify(a.body) } : {}),
    });
    const contentType = res.headers.get("content-type");
    const text = await res.text();
    // application/json and application/*+json (problem+json) parse; anything else (NDJSON) stays text.
    const body: unknown = text && contentType && /^application\/([\w.-]+\+)?json\b/i.test(contentType) ? JSON.parse(text) : text || undefined;
    options.onResponse?.({ route: name, method: route.method, path: route.path, status: res.status, contentType, body });
    return res.ok
      ? { ok: true, status: res.status, headers: res.headers, body: body as SuccessBody<N> }
      : { ok: false, status: res.status, headers: res.headers, problem: body as ProblemBody };
  }

  return { call };
}

export type TickClient = ReturnType<typeof createTickClient>;
