import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createBreakers } from "@tick/breaker";
import { startSink, type Sink, type SinkAnswer } from "@tick/testing";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole({ TICK_SHARDS: "4" });

/** A process's health port as the status page sees it: /readyz answers what the test says, anything else 404. */
let readyz: Sink;
let seen: string[] = [];
let port = 0;
beforeAll(async () => {
  readyz = await startSink({
    respond: (req): SinkAnswer => {
      seen.push(req.url);
      const answer = (status: number, body: unknown) => ({ status, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      if (req.url === "/scheduler/readyz") return answer(404, {}); // a path other than /readyz is never fetched
      if (req.url === "/readyz" && req.headers.host?.startsWith("127.0.0.1")) return answer(200, { status: "ready", checks: ["database"], shards: [{ shard: 0, epoch: "3" }] });
      if (req.url === "/readyz") return answer(503, { status: "not_ready", failed: { redis: "connect ECONNREFUSED" } });
      return answer(404, {});
    },
  });
  port = readyz.port;
});
afterAll(() => readyz.close());

async function operatorClient() {
  const home = await suite.h.createTenant();
  const user = await suite.h.addUser(home.id, "viewer");
  await suite.h.prisma.user.update({ where: { id: user.id }, data: { platformOperator: true } });
  return suite.h.sessionClient(await suite.h.signIn(user.email, user.password));
}

describe("operator status", () => {
  it("is a platform operator's only: a tenant owner's session 403, an API key 403, anonymous 401; the page says so", async () => {
    const owner = await suite.h.addUser(suite.a.id, "owner");
    const cookie = await suite.h.signIn(owner.email, owner.password);
    expect((await suite.h.sessionClient(cookie).call("operatorStatus", {})).status).toBe(403);
    expect((await suite.h.client(suite.a.apiKey).call("operatorStatus", {})).status).toBe(403);
    expect((await suite.h.client("").call("operatorStatus", {})).status).toBe(401);
    const page = await fetch(`${suite.h.baseUrl}/operator/status`, { headers: { cookie } });
    expect(await page.text()).toContain("This page is for the platform");
  });

  it("shows the shard map, each process's heartbeat and its own /readyz, outbox lag and open breakers per dependency", async () => {
    const db = suite.h.prisma;
    await db.$executeRawUnsafe(`DELETE FROM shard_leases`);
    await db.$executeRawUnsafe(
      `INSERT INTO shard_leases (shard, holder, epoch, region, expires_at) VALUES
         (0, 's-1', 3, 'eu', now() + interval '10 seconds'), (1, 's-1', 1, 'eu', now() + interval '10 seconds'),
         (2, 's-gone', 7, 'us', now() - interval '5 seconds'), (3, NULL, 2, NULL, now() - interval '1 minute')`,
    );
    await db.$executeRawUnsafe(
      `INSERT INTO scheduler_nodes (id, region, heartbeat_at, expires_at, version, health_url, started_at, due_index) VALUES
         ('s-1', 'eu', now() - interval '1 second', now() + interval '9 seconds', '0.1.0', 'http://127.0.0.1:${port}/readyz', now() - interval '1 hour', '{"0":"index","1":"polling"}'),
         ('s-gone', 'us', now() - interval '2 minutes', now() - interval '1 minute', '0.1.0', 'http://127.0.0.1:${port}/scheduler/readyz', now() - interval '1 hour', '{}'),
         ('s-old', 'us', now() - interval '2 hours', now() - interval '2 hours', '0.0.9', NULL, NULL, NULL)`,
    );
    await db.$executeRawUnsafe(
      `INSERT INTO worker_nodes (id, region, version, health_url, started_at, heartbeat_at, expires_at) VALUES
         ('w-1', 'eu', '0.1.0', 'http://localhost:${port}/readyz', now() - interval '1 hour', now(), now() + interval '30 seconds'),
         ('w-odd', 'eu', '0.1.0', 'http://127.0.0.1:${port}/scheduler/readyz', now() - interval '1 hour', now(), now() + interval '30 seconds')`,
    );
    // An unpublished row 42 s old: the lag is its age (no scheduler relays it here).
    await db.$executeRawUnsafe(`INSERT INTO outbox (kind, shard, tenant_id, payload, created_at) VALUES ('webhook', 0, $1::uuid, '{}', now() - interval '42 seconds')`, suite.a.id);
    const redis = new Redis(suite.h.redis.url);
    try {
      const breakers = createBreakers({ redis, prefix: suite.h.redis.prefix, policy: { minRequests: 2, openMs: 600_000 } });
      const [t1, t2] = [crypto.randomUUID(), crypto.randomUUID()];
      for (const key of [{ tenantId: t1, dependency: "api.example.com" }, { tenantId: t2, dependency: "api.example.com" }, { tenantId: t1, dependency: "mail.example" }]) {
        for (let i = 0; i < 2; i++) await breakers.record(key, false);
      }
      seen = [];
      const client = await operatorClient();
      const res = await client.call("operatorStatus", {});
      if (!res.ok) throw new Error(`status failed: ${res.status}`);
      const s = res.body;
      expect(s.shardCount).toBe(4);
      expect(s.shards.map(({ expiresAt: _e, ...rest }) => rest)).toEqual([
        { shard: 0, holder: "s-1", region: "eu", epoch: "3", held: true, dueIndex: "index" },
        { shard: 1, holder: "s-1", region: "eu", epoch: "1", held: true, dueIndex: "polling" },
        { shard: 2, holder: "s-gone", region: "us", epoch: "7", held: false, dueIndex: null },
        { shard: 3, holder: null, region: null, epoch: "2", held: false, dueIndex: null },
      ]);
      const nodes = Object.fromEntries(s.nodes.map((n) => [n.id, n]));
      expect(Object.keys(nodes).sort()).toEqual(["s-1", "s-gone", "w-1", "w-odd"]); // s-old: gone for hours
      expect(nodes["s-1"]).toMatchObject({ role: "scheduler", region: "eu", version: "0.1.0", live: true, shards: [0, 1], readiness: { status: "ready", httpStatus: 200, checks: ["database"], failed: {} } });
      expect(nodes["s-1"]!.heartbeatAgeSeconds).toBeGreaterThanOrEqual(0.5);
      expect(nodes["s-1"]!.heartbeatAgeSeconds).toBeLessThan(10);
      // Gone: not asked; the worker's failing check is shown; an address other than /readyz is never fetched.
      expect(nodes["s-gone"]).toMatchObject({ live: false, shards: [], readiness: { status: "unknown" } });
      expect(nodes["w-1"]).toMatchObject({ role: "worker", live: true, readiness: { status: "not_ready", httpStatus: 503, failed: { redis: "connect ECONNREFUSED" } } });
      expect(nodes["w-odd"]!.readiness).toMatchObject({ status: "unknown" });
      expect(seen.sort()).toEqual(["/readyz", "/readyz"]);
      expect(s.breakers.available).toBe(true);
      expect(s.breakers.open).toEqual([
        { dependency: "api.example.com", openTenants: 2, tenantIds: [t1, t2].sort() },
        { dependency: "mail.example", openTenants: 1, tenantIds: [t1] },
      ]);
      expect(s.outbox.backlog).toBe(1);
      expect(s.outbox.lagSeconds).toBeGreaterThanOrEqual(42);
      expect(s.outbox.lagSeconds).toBeLessThan(60);
    } finally {
      redis.disconnect();
    }
  });

  itConformsToOpenApi(suite, 3);
});
