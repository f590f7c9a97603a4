import { defineConfig } from "vitest/config";

// One run over every workspace that has unit or integration tests, and the npm start/test scripts
// (npm test calls this after the build).
export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*", "tooling/*", "scripts"],
  },
});
