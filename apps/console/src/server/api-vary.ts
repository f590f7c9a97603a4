import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage, ServerResponse } from "node:http";

// Next's App Router adds these to `Vary` on every app route, route handlers included, so caches keep a
// page's HTML and its RSC payload apart. An API answer has no RSC form: they only split caches.
const ROUTER_VARY = new Set(["rsc", "next-router-state-tree", "next-router-prefetch", "next-router-segment-prefetch", "next-url"]);

/** The API, next-auth's routes and the health endpoints: route handlers, never pages. */
const isApiPath = (url: string): boolean => /^\/(api\/|(healthz|readyz)(\/|\?|$))/.test(url);

/** A `Vary` value (or Node's list of them) without Next's router headers; undefined when nothing is left. */
function withoutRouterVary(vary: string | number | string[]): string | undefined {
  const kept = [vary].flat().flatMap((v) => String(v).split(",")).map((v) => v.trim()).filter((v) => v && !ROUTER_VARY.has(v.toLowerCase()));
  return kept.length ? kept.join(", ") : undefined;
}

/**
 * Takes Next's router headers out of `Vary` on API responses. Next appends them to the Node response
 * before the handler runs and appends a handler's own `Vary` to them, and next.config `headers()` is
 * applied before them too, so only the response's last step can drop them: its `writeHead`, wrapped
 * here for API requests (the channel reports each request before Next sees it).
 */
export function stripRouterVaryFromApi(): void {
  subscribe("http.server.request.start", (message) => {
    const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
    if (!isApiPath(request.url ?? "")) return;
    const writeHead = response.writeHead.bind(response) as (...args: unknown[]) => ServerResponse;
    response.writeHead = (...args: unknown[]) => {
      const vary = response.getHeader("vary");
      if (vary !== undefined) {
        const kept = withoutRouterVary(vary);
        if (kept) response.setHeader("vary", kept);
        else response.removeHeader("vary");
      }
      return writeHead(...args);
    };
  });
}
