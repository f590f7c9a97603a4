import { randomBytes } from "node:crypto";
import { NextResponse, type NextRequest } from "next/server";
import { AppError, toProblem } from "@tick/core";
import { getEnv } from "@/server/env";
import { STRICT_TRANSPORT_SECURITY } from "@tick/contract/response-headers";

/**
 * The Content-Security-Policy of every console page, with a nonce made for this request. Next reads the
 * nonce from the request's CSP header while rendering and puts it on its own scripts (the runtime, the
 * page's chunks, the inline flight data), so a page must render per request: static HTML would carry
 * no nonce. The headers every response gets (nosniff, X-Frame-Options, Referrer-Policy, the API's CSP)
 * come from next.config.ts; /api is left out of this proxy so the API's hot path never runs it.
 */
export function proxy(request: NextRequest): NextResponse | Response {
  if (request.nextUrl.pathname.startsWith("/api/")) return undecodableApiPath(request);
  const nonce = randomBytes(16).toString("base64");
  const https = servedOverHttps(request);
  const csp = pageContentSecurityPolicy(nonce, https);

  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("Content-Security-Policy", csp);
  requestHeaders.set("x-nonce", nonce);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set("Content-Security-Policy", csp);
  if (https) response.headers.set("Strict-Transport-Security", STRICT_TRANSPORT_SECURITY);
  return response;
}

/**
 * An /api path with a percent escape that is not UTF-8 (`%ED%A0%80`, `%C0%80`, a bare `%`) names no resource: a
 * 404 problem, as any malformed id is. Next itself would fail decoding the route's parameters before any handler
 * runs and answer a bare 500. Only /api paths holding a `%` come here (see the matcher), so the API's hot path,
 * whose ids never need escaping, does not run this proxy.
 */
function undecodableApiPath(request: NextRequest): NextResponse | Response {
  try {
    decodeURIComponent(request.nextUrl.pathname);
    return NextResponse.next();
  } catch {
    const problem = toProblem(new AppError("not_found", "No such resource."), request.nextUrl.pathname);
    return new Response(JSON.stringify(problem), { status: problem.status, headers: { "content-type": "application/problem+json", "cache-control": "no-store" } });
  }
}

/** The console's public URL is https, or the TLS-terminating proxy in front says this request was. */
function servedOverHttps(request: NextRequest): boolean {
  if (getEnv().NEXTAUTH_URL.startsWith("https:")) return true;
  // A chain of proxies may list several: the first is what the client used.
  return request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https";
}

function pageContentSecurityPolicy(nonce: string, https: boolean): string {
  // `next dev` evaluates modules and injects the error overlay's styles: allowed there only.
  const dev = getEnv().NODE_ENV === "development";
  return [
    "default-src 'self'",
    // Only scripts carrying this response's nonce run, and the chunks they load ('strict-dynamic'; it
    // makes browsers ignore 'self' and host lists, which stay only for browsers without CSP level 3).
    // No 'unsafe-inline', no 'unsafe-eval': React and Next use neither in production.
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    // Style attributes need 'unsafe-inline': React renders `style={{ width }}` (progress bars, the
    // attempt timeline, chart sizes) into the HTML as style="…" attributes, which a nonce cannot cover.
    // <style> elements are held to the nonce (Next puts it on its own) or a stylesheet from this origin
    // (Tailwind's CSS is a file): an injected <style> could read the page through attribute selectors.
    // style-src is the fallback of browsers without style-src-elem/-attr (CSP level 3), which then allow
    // inline styles as before instead of losing every style attribute.
    "style-src 'self' 'unsafe-inline'",
    dev ? "style-src-elem 'self' 'unsafe-inline'" : `style-src-elem 'self' 'nonce-${nonce}'`,
    "style-src-attr 'unsafe-inline'",
    // Tailwind and uPlot may use data: URIs in CSS; charts draw on a canvas.
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    // The pages call the console's own API only.
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    // No other site may frame the console (clickjacking); X-Frame-Options: DENY says the same to old browsers.
    "frame-ancestors 'none'",
    // On https only: on a plain-http console (npm start, 127.0.0.1) it would send same-origin requests to https.
    ...(https ? ["upgrade-insecure-requests"] : []),
  ].join("; ");
}

export const config = {
  // Pages, and /api paths holding a percent escape; not the rest of the API (its static headers come from
  // next.config.ts), health probes, Next's static
  // files, or the router's prefetches (RSC payloads, no HTML to protect).
  matcher: [
    // /api paths with a percent escape only: the check for undecodable ones.
    "/api/:rest(.*%.*)",
    {
      source: "/((?!api/|api$|_next/static|_next/image|favicon\\.ico|healthz|readyz).*)",
      missing: [
        { type: "header", key: "next-router-prefetch" },
        { type: "header", key: "purpose", value: "prefetch" },
      ],
    },
  ],
};
