import type { NextConfig } from "next";

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
  typedRoutes: false,
};

export default config;
