import { defineConfig } from "vitest/config";

// One run over every workspace that has unit or integration tests (npm test calls this after the build).
export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*"],
  },
});
