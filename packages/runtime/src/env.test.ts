import { describe, expect, it } from "vitest";
import { z } from "zod";
import { EnvError, baseEnvShape, parseEnv, port, serviceEnvShape } from "./env.js";
import { createLogger } from "./logger.js";
import { createRedis, redisTarget, sentinelOptions } from "./stores.js";

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

describe("Redis Sentinel", () => {
  it("without REDIS_SENTINELS, REDIS_URL is the server", () => {
    const env = parseEnv(schema, good);
    expect(env.REDIS_SENTINELS).toBeUndefined();
    expect(redisTarget(env)).toMatchObject({ url: good.REDIS_URL, sentinels: undefined });
  });

  it("parses the sentinels, the master name and the passwords into ioredis' Sentinel options", () => {
    const env = parseEnv(schema, {
      ...good,
      REDIS_URL: "rediss://tick:s3cret%21@ignored.example:6379/2",
      REDIS_SENTINELS: " 10.0.0.5:26379, sentinel-b.internal:26380 ,[fd00::7]:26379",
      REDIS_SENTINEL_MASTER: "tick-primary",
      REDIS_SENTINEL_PASSWORD: "sentinel-pass",
    });
    expect(env.REDIS_SENTINELS).toEqual([
      { host: "10.0.0.5", port: 26379 },
      { host: "sentinel-b.internal", port: 26380 },
      { host: "fd00::7", port: 26379 },
    ]);
    const options = sentinelOptions(redisTarget(env));
    expect(options).toMatchObject({
      sentinels: env.REDIS_SENTINELS,
      name: "tick-primary",
      sentinelPassword: "sentinel-pass",
      username: "tick",
      password: "s3cret!",
      db: 2,
      tls: {},
      enableTLSForSentinelMode: true,
      failoverDetector: true,
    });
    expect(options.host).toBeUndefined();
  });

  it("every connection reconnects when its primary was demoted under it (READONLY), and only then", () => {
    const logger = createLogger({ name: "test", level: "silent" });
    for (const target of ["redis://127.0.0.1:1", { url: "redis://127.0.0.1:1", sentinels: [{ host: "127.0.0.1", port: 1 }] }]) {
      const redis = createRedis(target, logger);
      try {
        const reconnect = redis.options.reconnectOnError as (err: Error) => boolean;
        expect(reconnect(new Error("READONLY You can't write against a read only replica."))).toBe(true);
        expect(reconnect(new Error("WRONGTYPE Operation against a key"))).toBe(false);
      } finally {
        redis.disconnect();
      }
    }
  });

  it("the master name defaults to Redis' own example name, mymaster", () => {
    expect(sentinelOptions(redisTarget(parseEnv(schema, { ...good, REDIS_SENTINELS: "127.0.0.1:26379" }))).name).toBe("mymaster");
  });

  it.each(["127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "http://127.0.0.1:26379", "a b:26379", ",,"])("refuses the sentinel list %j, naming REDIS_SENTINELS", (list) => {
    const problems = problemsOf({ ...good, REDIS_SENTINELS: list });
    expect(problems.map((p) => p.variable)).toEqual(["REDIS_SENTINELS"]);
  });
});
