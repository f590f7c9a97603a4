import { describe, expect, it } from "vitest";
import { z } from "zod";
import { EnvError, baseEnvShape, parseEnv, port, serviceEnvShape } from "./env.js";

const schema = z.object({ ...baseEnvShape, PORT: port.default(3000) });
const good = { DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/tick", REDIS_URL: "redis://127.0.0.1:6379" };

function problemsOf(env: Record<string, string | undefined>) {
  try {
    parseEnv(schema, env);
  } catch (err) {
    expect(err).toBeInstanceOf(EnvError);
    return (err as EnvError).problems;
  }
  throw new Error("expected parseEnv to throw");
}

describe("parseEnv", () => {
  it("returns typed values with defaults applied", () => {
    const env = parseEnv(schema, { ...good, PORT: "8080" });
    expect(env.PORT).toBe(8080);
    expect(env.LOG_LEVEL).toBe("info");
    expect(env.TICK_REDIS_PREFIX).toBe("tick");
    expect(env.TICK_BIND_HOST).toBe("127.0.0.1");
  });

  it.each(["0.0.0.0", "::", "::1", "10.1.2.3", "localhost", "tick-console.internal"])("accepts the bind address %s", (host) => {
    expect(parseEnv(schema, { ...good, TICK_BIND_HOST: host }).TICK_BIND_HOST).toBe(host);
  });

  it.each([
    [{ REDIS_URL: good.REDIS_URL }, "DATABASE_URL", /required/],
    [{ ...good, DATABASE_URL: "mysql://x" }, "DATABASE_URL", /postgresql:\/\//],
    [{ ...good, REDIS_URL: "not a url" }, "REDIS_URL", /redis:\/\//],
    [{ ...good, PORT: "70000" }, "PORT", /./],
    [{ ...good, LOG_LEVEL: "loud" }, "LOG_LEVEL", /./],
    [{ ...good, TICK_BIND_HOST: "http://0.0.0.0" }, "TICK_BIND_HOST", /IP address/],
    [{ ...good, TICK_BIND_HOST: "every interface" }, "TICK_BIND_HOST", /IP address/],
  ])("names the bad variable (%#)", (env, variable, message) => {
    const problems = problemsOf(env);
    expect(problems.map((p) => p.variable)).toEqual([variable]);
    expect(problems[0]!.message).toMatch(message);
  });

  it("says a variable that is set but malformed is malformed, not missing", () => {
    const [problem] = problemsOf({ ...good, PORT: "lots" });
    expect(problem?.variable).toBe("PORT");
    expect(problem?.message).toMatch(/expected number/);
  });

  it("treats empty strings as unset and reports every problem at once", () => {
    const problems = problemsOf({ DATABASE_URL: "", REDIS_URL: "" });
    expect(problems.map((p) => p.variable).sort()).toEqual(["DATABASE_URL", "REDIS_URL"]);
    try {
      parseEnv(schema, {});
    } catch (err) {
      expect((err as Error).message).toContain("DATABASE_URL: is required but not set");
    }
  });
});

describe("serviceEnvShape", () => {
  const service = z.object({ ...baseEnvShape, ...serviceEnvShape });

  it("parses the test clock skew (the chaos suite passes it as a string), none by default", () => {
    expect(parseEnv(service, { ...good, TICK_TEST_CLOCK_SKEW_MS: "-1800" }).TICK_TEST_CLOCK_SKEW_MS).toBe(-1800);
    expect(parseEnv(service, good).TICK_TEST_CLOCK_SKEW_MS).toBe(0);
  });

  it("refuses a skew that is not a whole number of milliseconds, naming it", () => {
    expect(() => parseEnv(service, { ...good, TICK_TEST_CLOCK_SKEW_MS: "2s" })).toThrow(/TICK_TEST_CLOCK_SKEW_MS/);
  });
});
