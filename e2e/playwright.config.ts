import { defineConfig } from "@playwright/test";
import { productState } from "./tests/product-state";

// The product is started by `npm test` (scripts/test.mjs) through the same script as `npm start`;
// these tests drive it over HTTP and in Debian's chromium.
export default defineConfig({
  testDir: "./tests",
  timeout: 30_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"], ["json", { outputFile: process.env.TICK_E2E_REPORT ?? "test-results/report.json" }]],
  outputDir: "test-results/artifacts",
  use: {
    baseURL: productState().consoleUrl,
    browserName: "chromium",
    screenshot: "only-on-failure",
    trace: "off",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
});
