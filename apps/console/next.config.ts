import type { NextConfig } from "next";

/**
 * Headers of every response, pages and API alike, fixed at build time (no per-request work on the API's
 * hot path). Pages get their Content-Security-Policy, with a per-request nonce, from src/proxy.ts.
 */
const EVERY_RESPONSE = [
  // Browsers take each response's Content-Type as given (no sniffing JSON or text into HTML or script).
  { key: "X-Content-Type-Options", value: "nosniff" },
  // Other origins learn the console's origin from a link, never a path (job, key or invitation IDs).
  { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
  // No framing (clickjacking), for browsers without CSP frame-ancestors.
  { key: "X-Frame-Options", value: "DENY" },
];

/**
 * The API answers JSON (and NDJSON, and next-auth's redirects): nothing in it may load or run anything,
 * or be framed. An /api address without a route falls back to the console's 404 page, shown unstyled.
 */
const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * next-auth's own pages (/api/auth/signout, /api/auth/error) are plain HTML with an inline <style> and
 * a form posting back to /api/auth: no script.
 */
const AUTH_PAGES_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** As src/proxy.ts sends on pages of a console served over https. */
const STRICT_TRANSPORT_SECURITY = "max-age=31536000; includeSubDomains";

const config: NextConfig = {
  // Node-only drivers stay outside the bundle and are required at run time.
  // The OpenTelemetry SDK is loaded only when tracing is on (a dynamic import in @tick/runtime).
  serverExternalPackages: [
    "pg",
    "@prisma/adapter-pg",
    "@prisma/client",
    "bullmq",
    "ioredis",
    "pino",
    "prom-client",
    "@opentelemetry/api",
    "@opentelemetry/sdk-trace",
    "@opentelemetry/resources",
    "@opentelemetry/exporter-trace-otlp-http",
    "@opentelemetry/exporter-trace-otlp-proto",
  ],
  poweredByHeader: false,
  // When several entries set one header, the last matching entry wins: /api/auth after /api.
  headers: () =>
    Promise.resolve([
      { source: "/:path*", headers: EVERY_RESPONSE },
      { source: "/api/:path*", headers: [{ key: "Content-Security-Policy", value: API_CSP }] },
      { source: "/api/auth/:path*", headers: [{ key: "Content-Security-Policy", value: AUTH_PAGES_CSP }] },
      // Behind a TLS-terminating proxy: every response, the API's included.
      { source: "/:path*", has: [{ type: "header", key: "x-forwarded-proto", value: "https" }], headers: [{ key: "Strict-Transport-Security", value: STRICT_TRANSPORT_SECURITY }] },
    ]),
  typedRoutes: false,
};

export default config;
