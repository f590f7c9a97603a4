import type { NextConfig } from "next";
import { API_CSP, AUTH_PAGES_CSP, EVERY_RESPONSE, STRICT_TRANSPORT_SECURITY } from "@tick/contract/response-headers";

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
