import type { NextConfig } from "next";

const config: NextConfig = {
  // Node-only drivers stay outside the bundle and are required at run time.
  serverExternalPackages: ["pg", "@prisma/adapter-pg", "@prisma/client", "bullmq", "ioredis", "pino", "prom-client"],
  poweredByHeader: false,
  typedRoutes: false,
};

export default config;
