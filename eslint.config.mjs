// @ts-check
// `npm run lint`: ESLint over the whole repository with typescript-eslint's type-checked rules. Types come
// from each workspace's tsconfig.eslint.json (its build config plus the tests and config files the build
// leaves out), so the workspaces' packages must be built first (their exports point at dist/*.d.ts).
import js from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  globalIgnores([
    "**/dist/",
    "**/.next/",
    "**/next-env.d.ts",
    "packages/db/src/generated/",
    ".data/",
    "**/coverage/",
    "**/test-results/",
    "**/playwright-report/",
  ]),

  {
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },

  {
    files: ["**/*.{ts,tsx,mjs}"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        project: ["./tsconfig.eslint.json", "./apps/*/tsconfig.eslint.json", "./packages/*/tsconfig.eslint.json", "./tooling/*/tsconfig.eslint.json", "./e2e/tsconfig.json"],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Both are in recommendedTypeChecked; named here because an unhandled rejection is the bug this lint is for.
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      // Off: here `async` without `await` is deliberate. It makes a function meet a Promise-returning contract
      // (route handlers, service start and stop hooks, callback defaults) and turns a synchronous throw into a
      // rejection the caller's .catch sees; dropping it would change that. A missing await is what
      // no-floating-promises and no-misused-promises report.
      "@typescript-eslint/require-await": "off",
      // `_`-prefixed names are unused on purpose (callback parameters, tuple slots), and destructuring a key
      // next to a rest element is how a key is left out of a copy (`const { $schema: _s, ...rest } = raw`).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },

  // Plain JavaScript (the scripts, config files) has no annotations: untyped parameters, JSON.parse and untyped
  // modules are \`any\`, so the no-unsafe-* rules would flag most lines without finding anything. The other
  // type-aware rules (floating or misused promises, await of a non-promise) still run on it.
  {
    files: ["**/*.mjs"],
    rules: {
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },

  // The console's pages and components run in the browser too.
  {
    files: ["apps/console/src/**/*.tsx"],
    extends: [reactHooks.configs.flat.recommended],
    languageOptions: { globals: globals.browser },
  },

  // CONVENTIONS.md: only an app's composition root reads process.env (apps/*/src/main.ts; the console has no
  // main, so its server/env.ts says so at the line). Tests, the benchmark, the fault-injection suite and the
  // scripts are tools around the product and read their own variables.
  {
    files: ["apps/*/src/**/*.{ts,tsx}", "packages/*/src/**/*.ts", "tooling/*/src/**/*.ts"],
    ignores: ["apps/*/src/main.ts", "**/*.test.ts", "tooling/bench/**", "tooling/chaos/**", "packages/testing/**"],
    rules: {
      "no-restricted-properties": [
        "error",
        { object: "process", property: "env", message: "Only an app's composition root reads process.env; take config as a parameter." },
      ],
    },
  },
);
