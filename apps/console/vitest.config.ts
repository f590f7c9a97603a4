import { defineConfig } from "vitest/config";

// Integration tests over HTTP against the built console (`next start`), real Postgres and Redis.
export default defineConfig({
  test: {
    name: "@tick/console",
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
