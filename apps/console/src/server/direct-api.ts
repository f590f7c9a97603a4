import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import type { ApiPipeline, PipelineRequest } from "./api/route";
import { isMetricsPort } from "./metrics-server";
import { problemAnswer, type ApiAnswer } from "./problem";
import { API_CSP, EVERY_RESPONSE, STRICT_TRANSPORT_SECURITY } from "@tick/contract/response-headers";

/** Routes served directly, by "METHOD /path" (exact, query aside): the pipeline apiRoute built for Next. */
export type DirectRoutes = ReadonlyMap<string, ApiPipeline>;

/** What next.config.ts has Next send on every /api response. */
const API_HEADERS: Record<string, string> = {
  ...Object.fromEntries(EVERY_RESPONSE.map((h) => [h.key.toLowerCase(), h.value])),
  "content-security-policy": API_CSP,
};

const pathOf = (url: string): string => {
  const q = url.indexOf("?");
  return q < 0 ? url : url.slice(0, q);
};

/**
 * Serves the API's hottest routes (creating a job) before Next's router for requests that carry an API key.
 * Next spends about a millisecond of CPU on each request it routes (its router, Web Request and Response
 * objects and streams), several times what a create costs once its database work is grouped; these
 * requests go through the same pipeline (apiRoute: authentication, scope, parsing, errors, metrics) and
 * get the same headers, written straight to Node's response. Console sessions, every other route and any
 * other method or path (a trailing slash, a percent escape) are Next's as before.
 *
 * Next does not hand out its http.Server: each request names it on the `http.server.request.start`
 * channel, published just before the server emits `request`, so the first request of each server installs
 * the dispatch in front of Next's one listener (a server with any other number of listeners is left alone).
 */
export function installDirectApi(routes: DirectRoutes): void {
  const seen = new WeakSet<Server>();
  subscribe("http.server.request.start", (message) => {
    const { server } = message as { server: Server };
    if (seen.has(server)) return;
    seen.add(server);
    if (isMetricsPort((server.address() as AddressInfo | null)?.port)) return;
    const listeners = server.listeners("request");
    if (listeners.length !== 1) return;
    const next = listeners[0] as (req: IncomingMessage, res: ServerResponse) => void;
    server.removeListener("request", next);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      const pipeline = req.headers.authorization === undefined ? undefined : routes.get(`${req.method} ${pathOf(req.url ?? "")}`);
      if (pipeline) void serveDirect(pipeline, req, res);
      else next.call(server, req, res);
    });
  });
}

async function serveDirect(pipeline: ApiPipeline, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let tooLarge = false;
  const request: PipelineRequest = {
    head: {
      method: req.method ?? "GET",
      url: req.url ?? "/",
      headers: {
        get: (name) => {
          const value = req.headers[name.toLowerCase()];
          return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
        },
      },
    },
    params: Promise.resolve({}),
    readBody: async (maxBytes) => {
      const body = await readNodeBody(req, maxBytes);
      tooLarge = body === null;
      return body;
    },
  };
  let answer: ApiAnswer;
  try {
    answer = await pipeline(request);
  } catch (err) {
    answer = problemAnswer(err, pathOf(req.url ?? "/"));
  }
  const headers: Record<string, string> = { ...API_HEADERS, ...answer.headers };
  if (req.headers["x-forwarded-proto"] === "https") headers["strict-transport-security"] = STRICT_TRANSPORT_SECURITY;
  // The rest of an oversized body was never read: the connection cannot carry another request.
  if (tooLarge) headers.connection = "close";
  if (typeof answer.body === "string") {
    headers["content-length"] = String(Buffer.byteLength(answer.body));
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  } else {
    res.writeHead(answer.status, headers);
    Readable.fromWeb(answer.body as import("node:stream/web").ReadableStream<Uint8Array>).pipe(res);
  }
}

/** The request's body, or null as soon as it passes `maxBytes` (the rest is left unread). */
function readNodeBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        stop();
        req.pause();
        resolve(null);
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}
