import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTickClient, type ResponseRecord } from "@tick/client";
import { createPrismaClient, hashPassword, type PrismaClient } from "@tick/db";
import { createTestApiKey, createTestDatabase, createTestTenant, testServerUrl, type TestDatabase } from "@tick/db/testing";
import { createTestRedis, freePort, startProcess, startTcpProxy, waitFor, type RunningProcess, type TcpProxy, type TestRedis } from "@tick/testing";
import { createOpenApiValidator } from "./openapi-validator";

const consoleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const nextBin = path.resolve(consoleDir, "../../node_modules/next/dist/bin/next");

type KeyRole = "owner" | "admin" | "operator" | "viewer";

export interface TestTenant {
  id: string;
  slug: string;
  apiKey: string;
  keyId: string;
}

export interface ConsoleHarness {
  baseUrl: string;
  /** The metrics side server's port (CONSOLE_METRICS_PORT): /metrics, /healthz, /readyz. */
  metricsPort: number;
  db: TestDatabase;
  redis: TestRedis;
  /** Sits between the console and Postgres: cut() it to make the database unreachable. */
  dbProxy: TcpProxy;
  /** Sits between the console and Redis. */
  redisProxy: TcpProxy;
  /** Direct connection (not through the proxy) for setup and assertions. */
  prisma: PrismaClient;
  process: RunningProcess;
  responses: ResponseRecord[];
  /** A tenant with a default queue and a first key (scopes `admin` and role owner unless given, as a sign-up's). */
  createTenant(options?: Partial<{ admissionRate: number; admissionBurst: number; maxPendingJobs: number; scopes: string[]; keyRole: KeyRole }>): Promise<TestTenant>;
  /** A key with these scopes, acting as `role` (default admin: the role of a key an admin made). */
  addKey(tenantId: string, scopes: string[], role?: KeyRole): Promise<{ apiKey: string; keyId: string }>;
  client(apiKey: string): ReturnType<typeof createTickClient>;
  /** A console user with this role in the tenant (password login). */
  addUser(tenantId: string, role: "owner" | "admin" | "operator" | "viewer"): Promise<{ id: string; email: string; password: string }>;
  /** Signs in through next-auth's credentials flow over HTTP; returns the session cookie. */
  signIn(email: string, password: string): Promise<string>;
  /** A client authenticated by a console session instead of an API key, calling from the console's origin. */
  sessionClient(cookie: string, headers?: Record<string, string>): ReturnType<typeof createTickClient>;
  /** Every response seen by clients of this harness that does not match the OpenAPI document. */
  openApiViolations(): Promise<string[]>;
  stop(): Promise<void>;
}

/** Starts the built console on a free port against a fresh database and Redis prefix. */
export async function startConsole(env: Record<string, string> = {}): Promise<ConsoleHarness> {
  const db = await createTestDatabase(testServerUrl());
  const redis = createTestRedis();
  const pg = new URL(db.url);
  const rd = new URL(redis.url);
  const dbProxy = await startTcpProxy({ targetHost: pg.hostname, targetPort: Number(pg.port || 5432) });
  const redisProxy = await startTcpProxy({ targetHost: rd.hostname, targetPort: Number(rd.port || 6379) });
  const port = await freePort();
  const metricsPort = env.CONSOLE_METRICS_PORT ? Number(env.CONSOLE_METRICS_PORT) : await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = startProcess(process.execPath, [nextBin, "start", consoleDir, "-p", String(port), "-H", "127.0.0.1"], {
    env: {
      ...process.env,
      NODE_ENV: "production",
      NEXT_TELEMETRY_DISABLED: "1",
      DATABASE_URL: dbProxy.url(db.url),
      REDIS_URL: redisProxy.url(redis.url),
      TICK_REDIS_PREFIX: redis.prefix,
      NEXTAUTH_SECRET: "test-secret-test-secret-test-secret-0123",
      NEXTAUTH_URL: baseUrl,
      CONSOLE_METRICS_PORT: String(metricsPort),
      LOG_LEVEL: "warn",
      ...env,
    },
  });
  const prisma = createPrismaClient(db.url, { max: 4 });
  const responses: ResponseRecord[] = [];
  const stop = async () => {
    await proc.stop();
    await prisma.$disconnect();
    await dbProxy.close();
    await redisProxy.close();
    await redis.cleanup().catch(() => {});
    await db.drop();
  };
  try {
    // Ready: Next answers /readyz, and the metrics side server (started beside it) listens.
    const answers = async (url: string) => (await fetch(url).catch(() => null))?.ok;
    await waitFor(async () => (await answers(`${baseUrl}/readyz`)) && (await answers(`http://127.0.0.1:${metricsPort}/healthz`)), {
      timeoutMs: 60_000,
      description: `console on ${baseUrl} (output: ${proc.output().slice(-500)})`,
    });
  } catch (err) {
    await stop();
    throw err;
  }

  let counter = 0;
  const addKey = (tenantId: string, scopes: string[], role: KeyRole = "admin") => createTestApiKey(prisma, tenantId, { scopes, role, name: `test ${++counter}` });
  const validator = createOpenApiValidator(baseUrl);

  return {
    baseUrl,
    metricsPort,
    db,
    redis,
    dbProxy,
    redisProxy,
    prisma,
    process: proc,
    responses,
    addKey,
    async createTenant(options = {}) {
      const { id, slug, apiKey, keyId } = await createTestTenant(prisma, {
        shardCount: 16,
        admissionRate: options.admissionRate,
        admissionBurst: options.admissionBurst,
        maxPendingJobs: options.maxPendingJobs,
        apiKey: { scopes: options.scopes ?? ["admin"], role: options.keyRole ?? "owner", name: `test ${++counter}` },
      });
      return { id, slug, apiKey, keyId };
    },
    client: (apiKey: string) => createTickClient({ baseUrl, apiKey, onResponse: (r) => responses.push(r) }),
    async addUser(tenantId, role) {
      const password = `pw-${crypto.randomUUID()}`;
      const email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.test`;
      const user = await prisma.user.create({ data: { email, passwordHash: await hashPassword(password), memberships: { create: { tenantId, role } } } });
      return { id: user.id, email, password };
    },
    async signIn(email, password) {
      const jar = new Map<string, string>();
      const keep = (res: Response) => {
        for (const c of res.headers.getSetCookie()) {
          const [pair] = c.split(";");
          const i = pair!.indexOf("=");
          jar.set(pair!.slice(0, i), pair!.slice(i + 1));
        }
      };
      const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
      const csrf = await fetch(`${baseUrl}/api/auth/csrf`);
      keep(csrf);
      const { csrfToken } = (await csrf.json()) as { csrfToken: string };
      const res = await fetch(`${baseUrl}/api/auth/callback/credentials`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookie() },
        body: new URLSearchParams({ csrfToken, email, password, json: "true" }),
      });
      keep(res);
      if (![...jar.keys()].some((k) => k.includes("session-token"))) throw new Error(`sign-in failed (${res.status})`);
      return cookie();
    },
    sessionClient: (cookie, headers = {}) =>
      createTickClient({ baseUrl, headers: { cookie, origin: baseUrl, ...headers }, onResponse: (r) => responses.push(r) }),
    openApiViolations: () => validator.violations(responses),
    stop,
  };
}

/** A valid job body aimed at a public address (never executed here: no worker runs in these tests). */
export const jobBody = (overrides: Record<string, unknown> = {}) => ({
  target: { method: "POST", url: "https://93.184.216.34/hooks/tick", headers: { "x-test": "1" }, body: "{}" },
  delayMs: 3_600_000,
  ...overrides,
});

/**
 * Registers a console (and one tenant, `a`) for the whole test file. The returned object is filled
 * in before the first test runs.
 */
export function useConsole(env: Record<string, string> = {}): { h: ConsoleHarness; a: TestTenant } {
  const suite = {} as { h: ConsoleHarness; a: TestTenant };
  beforeAll(async () => {
    suite.h = await startConsole(env);
    suite.a = await suite.h.createTenant();
  });
  afterAll(async () => suite.h?.stop());
  return suite;
}

/** Last test of a file: every response its clients saw matches the served OpenAPI document. */
export function itConformsToOpenApi(suite: { h: ConsoleHarness }, minimumResponses = 1): void {
  describe("the OpenAPI document", () => {
    it("every response of this suite validates against it", async () => {
      expect(suite.h.responses.length).toBeGreaterThanOrEqual(minimumResponses);
      expect(await suite.h.openApiViolations()).toEqual([]);
    });
  });
}
