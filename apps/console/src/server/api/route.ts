import type { z } from "zod";
import { AppError, IDEMPOTENCY_KEY_MAX_LENGTH, idempotencyKeySchema } from "@tick/core";
import { hasScope, routes, type RouteName } from "@tick/contract";
import { getContext } from "../context";
import { getEnv, type ConsoleEnv } from "../env";
import { answerToResponse, problemAnswer, type ApiAnswer } from "../problem";
import { getConsoleUser, type ConsoleUser } from "../auth";
import { assertSameOrigin, authenticateApiKey, authenticateSession, type ApiPrincipal } from "./authenticate";
import { assertCleanQuery, findBadParameters, parseJsonBody } from "./input-hygiene";
import { requestClientAddress } from "./client-address";
import type { RequestHead } from "./request-head";
import { getApiKeyLookup } from "./deps";

type Route<N extends RouteName> = (typeof routes)[N];
type Out<T> = T extends z.ZodType ? z.output<T> : Record<string, never>;

export interface ApiRequest<N extends RouteName> {
  principal: ApiPrincipal;
  params: Route<N> extends { params: infer P } ? Out<P> : Record<string, never>;
  query: Route<N> extends { query: infer Q } ? Out<Q> : Record<string, never>;
  /** The body, validated by the route's schema. */
  body: Route<N> extends { body: infer B } ? Out<B> : undefined;
  idempotencyKey: string | null;
  request: RequestHead;
}

/** The request of a `rawBody` route: its body is the parsed JSON, not yet validated (the handler validates it item by item). */
export type RawBodyApiRequest<N extends RouteName> = Omit<ApiRequest<N>, "body"> & { body: unknown };

export interface ApiResponse {
  status: number;
  /** JSON, or a stream sent as it is (set its content-type in `headers`). */
  body: unknown;
  headers?: Record<string, string>;
}

export interface ApiRouteOptions {
  /** Hand the parsed JSON to the handler unvalidated (it validates item by item, e.g. batch create). */
  rawBody?: boolean;
  /** Body limit for this route (default API_MAX_BODY_BYTES); read from config per request, not at build. */
  maxBodyBytes?: (env: ConsoleEnv) => number;
}

/** A request as the pipeline takes it: its head, its path parameters and a way to read its body. */
export interface PipelineRequest {
  head: RequestHead;
  params: Promise<Record<string, string>>;
  /** The body, or null once it is larger than `maxBytes` (reading stops there). */
  readBody(maxBytes: number): Promise<Buffer | null>;
}

/** The pipeline of one route (route name, parsing, auth, errors, metrics), as direct-api.ts calls it. */
export type ApiPipeline = (request: PipelineRequest) => Promise<ApiAnswer>;

/** A Next route handler that also carries its pipeline, for the direct path. */
export type RouteHandler = ((request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>) & { pipeline: ApiPipeline };

/** A Web Request's body, up to `maxBytes`. */
async function readWebBody(request: Request, maxBytes: number): Promise<Buffer | null> {
  const reader = request.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

async function readJson(request: PipelineRequest, maxBytes: number): Promise<unknown> {
  const type = request.head.headers.get("content-type") ?? "";
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw new AppError("unsupported_media_type", "Send the body as application/json.");
  }
  const declared = Number(request.head.headers.get("content-length") ?? "0");
  const tooLarge = () => new AppError("payload_too_large", `The body is larger than ${maxBytes} bytes.`);
  if (declared > maxBytes) throw tooLarge();
  const body = await request.readBody(maxBytes);
  if (body === null) throw tooLarge();
  // Nesting, NUL and lone surrogates are refused here, so rawBody routes (batch create) get the same care.
  return parseJsonBody(body.toString("utf8"));
}

/**
 * Who is calling, for per-address rate limits: the connection's address, or with TICK_TRUSTED_PROXIES=N
 * the X-Forwarded-For entry the outermost of those N proxies appended (client-address.ts).
 */
export function clientAddress(request: RequestHead): string {
  return requestClientAddress(request, getEnv().TICK_TRUSTED_PROXIES);
}

type AnyRoute = { scope: string | null; params?: z.ZodObject; query?: z.ZodObject; body?: z.ZodType; idempotent?: boolean };
type PipelineHandler<P> = (req: { principal: P; params: unknown; query: unknown; body: unknown; idempotencyKey: string | null; request: RequestHead }) => Promise<ApiResponse>;

/**
 * The request pipeline shared by every /api/v1 handler: input hygiene (input-hygiene.ts: nesting depth,
 * NUL, control characters, lone surrogates) and zod parsing of path, query and body, the Idempotency-Key
 * header, and every error mapped to problem+json. `authenticate` resolves the caller
 * (and may refuse) before anything is parsed. Every answer is counted by route name and status, with its
 * duration (tick_api_requests_total, tick_api_request_duration_seconds: in-memory updates only).
 * The Next route handler it returns carries the same pipeline as `pipeline`, for direct-api.ts.
 */
function handleRequest<P>(
  name: string,
  route: AnyRoute,
  options: ApiRouteOptions,
  authenticate: (request: RequestHead) => Promise<P>,
  handler: PipelineHandler<P>,
): RouteHandler {
  const answer = answerRequest(name, route, options, authenticate, handler);
  const pipeline: ApiPipeline = async (request) => {
    const started = performance.now();
    let status = 500; // what is answered if the pipeline itself throws
    try {
      const result = await answer(request);
      status = result.status;
      return result;
    } finally {
      getContext().metrics.request(name, status, (performance.now() - started) / 1000);
    }
  };
  const next = async (request: Request, context: { params: Promise<Record<string, string>> }) =>
    answerToResponse(await pipeline({ head: request, params: context.params, readBody: (maxBytes) => readWebBody(request, maxBytes) }));
  return Object.assign(next, { pipeline });
}

function answerRequest<P>(
  name: string,
  route: AnyRoute,
  options: ApiRouteOptions,
  authenticate: (request: RequestHead) => Promise<P>,
  handler: PipelineHandler<P>,
) {
  return async (pipelineRequest: PipelineRequest): Promise<ApiAnswer> => {
    const request = pipelineRequest.head;
    const url = new URL(request.url, "http://console.invalid");
    const instance = url.pathname;
    let tenantId: string | undefined;
    try {
      const principal = await authenticate(request);
      tenantId = (principal as { tenant?: { id: string } } | null)?.tenant?.id;
      let params: unknown = {};
      if (route.params) {
        const raw = await pipelineRequest.params;
        // A malformed id (or a name holding a NUL, a control character or a lone surrogate, which nothing
        // stored can) names no resource of this tenant: the same 404 as someone else's id.
        const parsed = findBadParameters(Object.entries(raw)).length === 0 ? route.params.safeParse(raw) : null;
        if (!parsed?.success) throw new AppError("not_found", "No such resource.");
        params = parsed.data;
      }
      let query = {};
      if (route.query) {
        const { searchParams } = url;
        assertCleanQuery(searchParams); // 422 before any value reaches a schema's transform or SQL
        query = route.query.parse(Object.fromEntries(searchParams));
      }
      let body: unknown;
      if (route.body) {
        const json = await readJson(pipelineRequest, (options.maxBodyBytes ?? ((env: ConsoleEnv) => env.API_MAX_BODY_BYTES))(getEnv()));
        body = options.rawBody ? json : route.body.parse(json);
      }
      const idempotencyKey = route.idempotent ? request.headers.get("idempotency-key") : null;
      if (idempotencyKey !== null && !idempotencyKeySchema.safeParse(idempotencyKey).success) {
        throw new AppError("bad_request", `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters.`);
      }
      const result = await handler({ principal, params, query, body, idempotencyKey, request });
      const stream = result.body instanceof ReadableStream;
      const headers = { ...(stream ? {} : { "content-type": "application/json" }), "cache-control": "no-store", ...lowerCaseKeys(result.headers) };
      return { status: result.status, headers, body: stream ? (result.body as ReadableStream<Uint8Array>) : JSON.stringify(result.body) };
    } catch (err) {
      if (!(err instanceof AppError) && !(err instanceof Error && err.name === "ZodError")) {
        getContext().logger.error({ err, route: name, tenantId }, "API request failed");
      }
      return problemAnswer(err, instance);
    }
  };
}

const lowerCaseKeys = (headers: Record<string, string> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));

/**
 * The one wrapper every authenticated /api/v1 handler goes through: API key (or console session) auth and
 * tenant resolution, the route's scope, then the shared pipeline (handleRequest). Handlers get a
 * tenant-scoped request and return status and body; they never see another tenant's key.
 */
export function apiRoute<N extends RouteName>(
  name: N,
  handler: (req: RawBodyApiRequest<N>) => Promise<ApiResponse>,
  options: ApiRouteOptions & { rawBody: true },
): ReturnType<typeof handleRequest>;
export function apiRoute<N extends RouteName>(
  name: N,
  handler: (req: ApiRequest<N>) => Promise<ApiResponse>,
  options?: ApiRouteOptions & { rawBody?: false },
): ReturnType<typeof handleRequest>;
export function apiRoute<N extends RouteName>(
  name: N,
  handler: ((req: ApiRequest<N>) => Promise<ApiResponse>) | ((req: RawBodyApiRequest<N>) => Promise<ApiResponse>),
  options: ApiRouteOptions = {},
) {
  const route = routes[name] as Route<N> & AnyRoute;
  const scope = route.scope;
  if (scope === null) throw new Error(`${name} is a public route: wrap it with publicApiRoute`);
  if (scope === "platform") throw new Error(`${name} is a platform operator route: wrap it with operatorApiRoute`);
  if (scope === "account") throw new Error(`${name} is an account route (the signed-in person's own session): wrap it with accountApiRoute`);
  return handleRequest(
    name,
    route,
    options,
    async (request) => {
      const app = getContext();
      const authorization = request.headers.get("authorization");
      const principal = authorization
        ? await authenticateApiKey(app.pool, getApiKeyLookup(), authorization)
        : await authenticateSession(app.pool, await getConsoleUser(), request);
      if (!hasScope(principal.scopes, scope)) {
        throw new AppError(
          "forbidden",
          principal.actor.type === "api_key" ? `This API key lacks the ${scope} scope.` : `Your role does not allow this (it needs ${scope}).`,
        );
      }
      return principal;
    },
    handler as (req: unknown) => Promise<ApiResponse>,
  );
}

/**
 * The signed-in person of an operation that takes a console session only: an API key is refused (403), no session
 * is 401, and a write must come from the console's origin.
 */
async function sessionOnlyUser(request: RequestHead, apiKeyRefusal: string, signInHint: string): Promise<ConsoleUser> {
  if (request.headers.get("authorization")) throw new AppError("forbidden", apiKeyRefusal);
  const user = await getConsoleUser();
  if (!user) throw new AppError("unauthorized", signInHint);
  assertSameOrigin(request);
  return user;
}

/** A platform operator, acting on tenants from the console (never through an API key). */
export interface OperatorPrincipal {
  actor: { type: "operator"; id: string };
  email: string;
}

export type OperatorApiRequest<N extends RouteName> = Omit<ApiRequest<N>, "principal"> & { principal: OperatorPrincipal };

/** A platform operator operation (scope `platform`): a console session of a platform operator only. */
export function operatorApiRoute<N extends RouteName>(name: N, handler: (req: OperatorApiRequest<N>) => Promise<ApiResponse>, options: ApiRouteOptions = {}) {
  const route = routes[name] as Route<N> & AnyRoute;
  if (route.scope !== "platform") throw new Error(`${name} is not a platform operator route`);
  return handleRequest(
    name,
    route,
    options,
    async (request): Promise<OperatorPrincipal> => {
      const user = await sessionOnlyUser(request, "Platform operator operations take an operator's console session, not an API key.", "Sign in to the console as a platform operator.");
      if (!user.platformOperator) throw new AppError("forbidden", "Only platform operators may do this.");
      return { actor: { type: "operator", id: user.id }, email: user.email };
    },
    handler as (req: unknown) => Promise<ApiResponse>,
  );
}

export type PublicApiRequest<N extends RouteName> = Omit<ApiRequest<N>, "principal"> & { clientAddress: string };

/** A public operation (scope null in the contract: sign-up): no credentials, the same parsing and errors. */
export function publicApiRoute<N extends RouteName>(name: N, handler: (req: PublicApiRequest<N>) => Promise<ApiResponse>, options: ApiRouteOptions = {}) {
  const route = routes[name] as Route<N> & AnyRoute;
  if (route.scope !== null) throw new Error(`${name} needs the ${route.scope} scope: wrap it with apiRoute`);
  return handleRequest(name, route, options, async () => null, (req) =>
    handler({ ...(req as unknown as PublicApiRequest<N>), clientAddress: clientAddress(req.request) }),
  );
}

/** The signed-in person acting on their own account (their sessions, their password): no tenant, never an API key. */
export interface AccountPrincipal {
  actor: { type: "user"; id: string };
  email: string;
  /** The session making the request (the Account page marks it; a password change keeps it). */
  sessionId: string;
}

export type AccountApiRequest<N extends RouteName> = Omit<ApiRequest<N>, "principal"> & { principal: AccountPrincipal };

/** An account operation (scope `account`): the person's own console session only, writes from the console's origin. */
export function accountApiRoute<N extends RouteName>(name: N, handler: (req: AccountApiRequest<N>) => Promise<ApiResponse>, options: ApiRouteOptions = {}) {
  const route = routes[name] as Route<N> & AnyRoute;
  if (route.scope !== "account") throw new Error(`${name} is not an account route`);
  return handleRequest(
    name,
    route,
    options,
    async (request): Promise<AccountPrincipal> => {
      const user = await sessionOnlyUser(request, "Account operations take your console session, not an API key.", "Sign in to the console.");
      return { actor: { type: "user", id: user.id }, email: user.email, sessionId: user.sessionId };
    },
    handler as (req: unknown) => Promise<ApiResponse>,
  );
}
