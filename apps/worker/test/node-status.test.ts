import { afterEach, describe, expect, it } from "vitest";
import { startTcpProxy, waitFor, type TcpProxy } from "@tick/testing";
import { useProcessWorld, type ProcessWorld } from "./harness.js";

let world!: ProcessWorld;
useProcessWorld((w) => {
  world = w;
});
let proxy: TcpProxy | undefined;
let redisProxy: TcpProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await redisProxy?.close();
});

const readyz = async (port: number) => {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe("heartbeats and readiness for the operator status page", () => {
  it("a worker keeps its row in worker_nodes (version, its /readyz address, heartbeat in database time) and removes it on a clean stop", async () => {
    const worker = await world.startWorker({ WORKER_ID: "w-status", TICK_REGION: "eu-test" });
    const row = async () =>
      (await world.pool.query<{ region: string; version: string; health_url: string; started_at: Date; heartbeat_at: Date; expires_at: Date; now: Date }>(
        `SELECT region, version, health_url, started_at, heartbeat_at, expires_at, now() AS now FROM worker_nodes WHERE id = 'w-status'`,
      )).rows[0];
    await waitFor(async () => (await row()) !== undefined, { timeoutMs: 10_000, description: "the worker's heartbeat row" });
    const first = (await row())!;
    expect(first).toMatchObject({ region: "eu-test", version: "0.1.0", health_url: `http://127.0.0.1:${worker.healthPort}/readyz` });
    expect(first.expires_at.getTime()).toBeGreaterThan(first.now.getTime());
    // The address it registered answers: ready, with the checks a worker needs.
    const answer = await (await fetch(first.health_url)).json();
    expect(answer).toMatchObject({ status: "ready", checks: ["database", "redis"], id: "w-status", version: "0.1.0" });
    // It beats again (WORKER_HEARTBEAT_INTERVAL is 500 ms here): a later heartbeat, the same start.
    await waitFor(async () => (await row())!.heartbeat_at.getTime() > first.heartbeat_at.getTime(), { timeoutMs: 5_000, description: "a second heartbeat" });
    expect((await row())!.started_at.getTime()).toBe(first.started_at.getTime());

    await worker.stop(10_000);
    expect(await row()).toBeUndefined();
  }, 60_000);

  it("a scheduler is ready while it reaches Postgres (not Redis), reports its held shards in /readyz and its heartbeat, and is not ready without Postgres", async () => {
    const url = new URL(world.db.url);
    proxy = await startTcpProxy({ targetHost: url.hostname, targetPort: Number(url.port || 5432) });
    const redisUrl = new URL(world.redis.url);
    redisProxy = await startTcpProxy({ targetHost: redisUrl.hostname, targetPort: Number(redisUrl.port || 6379) });
    const scheduler = await world.startScheduler({
      SCHEDULER_ID: "s-status",
      DATABASE_URL: proxy.url(world.db.url),
      REDIS_URL: redisProxy.url(world.redis.url),
      SCHEDULER_LEASE_TTL: "3s",
    });
    await waitFor(async () => ((await readyz(scheduler.healthPort)).body.shards as unknown[] | undefined)?.length === 4, { timeoutMs: 10_000, description: "all 4 shards reported" });
    const ready = await readyz(scheduler.healthPort);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: "ready", checks: ["database"], id: "s-status", version: "0.1.0" });
    const leases = (await world.pool.query<{ shard: number; epoch: string }>(`SELECT shard, epoch::text FROM shard_leases WHERE holder = 's-status' ORDER BY shard`)).rows;
    expect(ready.body.shards).toEqual(leases);
    // Its heartbeat row names its /readyz and how each held shard finds due work.
    await waitFor(
      async () => {
        const { rows } = await world.pool.query<{ due_index: Record<string, string> | null }>(`SELECT due_index FROM scheduler_nodes WHERE id = 's-status'`);
        return Object.keys(rows[0]?.due_index ?? {}).length === 4 && Object.values(rows[0]!.due_index!).every((m) => m === "index" || m === "polling");
      },
      { timeoutMs: 10_000, description: "the due-index mode of every held shard in the heartbeat" },
    );
    const node = (await world.pool.query<{ version: string; health_url: string }>(`SELECT version, health_url FROM scheduler_nodes WHERE id = 's-status'`)).rows[0]!;
    expect(node).toEqual({ version: "0.1.0", health_url: `http://127.0.0.1:${scheduler.healthPort}/readyz` });

    // Redis out of reach: still ready (dispatch polls Postgres, publishing waits in the outbox).
    redisProxy.cut();
    // Once it has noticed (its shards fall back to polling, as /readyz reports), it is still ready.
    await waitFor(async () => Object.values(((await readyz(scheduler.healthPort)).body.dueIndex ?? {}) as Record<string, string>).includes("polling"), {
      timeoutMs: 10_000,
      description: "a shard polling Postgres without Redis",
    });
    expect((await readyz(scheduler.healthPort)).status).toBe(200);
    redisProxy.restore();

    // Postgres out of reach: not ready, naming the check.
    proxy.cut();
    await waitFor(async () => (await readyz(scheduler.healthPort)).status === 503, { timeoutMs: 10_000, description: "not ready without Postgres" });
    const down = await readyz(scheduler.healthPort);
    expect(down.body.status).toBe("not_ready");
    expect(Object.keys(down.body.failed as object)).toEqual(["database"]);
    proxy.restore();
    await waitFor(async () => (await readyz(scheduler.healthPort)).status === 200, { timeoutMs: 15_000, description: "ready again with Postgres back" });
  }, 60_000);
});
