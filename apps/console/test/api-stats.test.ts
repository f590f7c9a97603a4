import { describe, expect, it } from "vitest";
import { problemType } from "@tick/core";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();

/** The database's now, ms. */
const dbNow = async () => (await suite.h.prisma.$queryRawUnsafe<{ now: Date }[]>(`SELECT now() AS now`))[0]!.now.getTime();

const queueId = async (tenantId: string, name: string) => {
  const rows = await suite.h.prisma.$queryRawUnsafe<{ id: string }[]>(
    `INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1::uuid, $2, now())
     ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING id::text`,
    tenantId,
    name,
  );
  return rows[0]!.id;
};

/** A rollup row as the scheduler writes it; `lag`: bucket index → count (14 buckets). */
async function stat(tenantId: string, queue: string, minute: number, c: { shard?: number; dep?: string; succeeded?: number; dead?: number; cancelled?: number; expired?: number; rateLimited?: number; lag?: Record<number, number> }) {
  const lag = Array.from({ length: 14 }, (_, i) => c.lag?.[i] ?? 0);
  await suite.h.prisma.$executeRawUnsafe(
    `INSERT INTO job_minute_stats (shard, tenant_id, minute, queue_id, dependency_key, succeeded, dead, cancelled, expired, lag_buckets, rate_limited)
     VALUES ($1, $2::uuid, $3, $4::uuid, $5, $6, $7, $8, $9, $10::int[], $11)`,
    c.shard ?? 0,
    tenantId,
    new Date(minute),
    await queueId(tenantId, queue),
    c.dep ?? "",
    c.succeeded ?? 0,
    c.dead ?? 0,
    c.cancelled ?? 0,
    c.expired ?? 0,
    lag,
    c.rateLimited ?? 0,
  );
}

async function gauge(tenantId: string, queue: string, minute: number, g: { shard?: number; due: number; waiting: number; inFlight: number; dead: number; oldest: number | null }) {
  await suite.h.prisma.$executeRawUnsafe(
    `INSERT INTO queue_minute_gauges (shard, tenant_id, minute, queue_id, due, waiting, in_flight, dead, oldest_due_age_ms)
     VALUES ($1, $2::uuid, $3, $4::uuid, $5, $6, $7, $8, $9)`,
    g.shard ?? 0,
    tenantId,
    new Date(minute),
    await queueId(tenantId, queue),
    g.due,
    g.waiting,
    g.inFlight,
    g.dead,
    g.oldest,
  );
}

const MIN = 60_000;

describe("GET /stats: the overview's time series from the per-minute rollups", () => {
  it("1h: 60 one-minute bins ending with the one holding now, counts summed over queues and shards, lag percentiles from the merged histogram", async () => {
    const a = await suite.h.createTenant();
    const b = await suite.h.createTenant();
    const now = await dbNow();
    const current = Math.floor(now / MIN) * MIN;
    // Two minutes ago, two queues and two shards' rows of one queue: they add up.
    await stat(a.id, "default", current - 2 * MIN, { shard: 0, succeeded: 6, dead: 1, lag: { 0: 5, 3: 2 } });
    await stat(a.id, "default", current - 2 * MIN, { shard: 1, succeeded: 2, cancelled: 1, lag: { 13: 2 } });
    await stat(a.id, "emails", current - 2 * MIN, { expired: 3, rateLimited: 2 });
    await stat(a.id, "default", current, { succeeded: 1, lag: { 7: 1 } });
    // Outside the hour: only in the longer windows.
    await stat(a.id, "default", current - 120 * MIN, { succeeded: 50, lag: { 1: 50 } });
    await stat(b.id, "default", current - 2 * MIN, { succeeded: 99 });
    await gauge(a.id, "default", current - 2 * MIN, { due: 4, waiting: 9, inFlight: 2, dead: 3, oldest: 12_345 });
    await gauge(a.id, "emails", current - 2 * MIN, { due: 0, waiting: 0, inFlight: 0, dead: 1, oldest: null });

    const res = await suite.h.client(a.apiKey).call("getStats", { query: { window: "1h" } });
    if (!res.ok) throw new Error(`expected success, got ${res.status} ${JSON.stringify(res.problem)}`);
    const s = res.body;
    expect(s).toMatchObject({ window: "1h", binSeconds: 60, from: new Date(current - 59 * MIN).toISOString(), to: new Date(current + MIN).toISOString() });
    expect(s.bins).toHaveLength(60);
    expect(s.bins.map((x) => Date.parse(x.at))).toEqual(Array.from({ length: 60 }, (_, i) => current - (59 - i) * MIN));
    // 9 lags: 5 under 10 ms, 2 in [50, 100), 2 from 300 s up: p50 reads 10, p99 the last finite bound.
    expect(s.bins[57]).toEqual({ at: new Date(current - 2 * MIN).toISOString(), succeeded: 8, dead: 1, cancelled: 1, expired: 3, rateLimited: 2, lagP50Ms: 10, lagP99Ms: 300_000, dlq: 4 });
    expect(s.bins[59]).toMatchObject({ succeeded: 1, lagP50Ms: 2_500, lagP99Ms: 2_500, dlq: null });
    expect(s.bins[0]).toEqual({ at: s.from, succeeded: 0, dead: 0, cancelled: 0, expired: 0, rateLimited: 0, lagP50Ms: null, lagP99Ms: null, dlq: null });
    expect(s.bins.reduce((n, x) => n + x.succeeded, 0)).toBe(9);
    expect(s.queues.map((q) => q.queue)).toEqual(["default", "emails"]);
    expect(s.queues[0]!.points).toHaveLength(60);
    expect(s.queues[0]!.points[57]).toEqual({ at: new Date(current - 2 * MIN).toISOString(), due: 4, waiting: 9, inFlight: 2, oldestDueAgeMs: 12_345 });
    expect(s.queues[0]!.points[58]).toEqual({ at: new Date(current - MIN).toISOString(), due: null, waiting: null, inFlight: null, oldestDueAgeMs: null });
    expect(s.dependencies).toEqual([]);
    expect(s.breakerOpenings).toEqual([]);

    // b sees its own, never a's.
    const other = await suite.h.client(b.apiKey).call("getStats", { query: { window: "1h" } });
    if (!other.ok) throw new Error("expected success");
    expect(other.body.bins.reduce((n, x) => n + x.succeeded, 0)).toBe(99);
    expect(other.body.queues).toEqual([]);
  });

  it("24h and 7d: 96 bins of 15 minutes and 84 of 2 hours, aligned to their size; a bin's gauges are its last sampled minute", async () => {
    const a = await suite.h.createTenant();
    const now = await dbNow();
    const q15 = 15 * MIN;
    const bin = Math.floor((now - 3 * 3_600_000) / q15) * q15; // a 15-minute bin three hours back
    await gauge(a.id, "default", bin + MIN, { due: 1, waiting: 1, inFlight: 1, dead: 1, oldest: 1_000 });
    await gauge(a.id, "default", bin + 5 * MIN, { due: 5, waiting: 6, inFlight: 0, dead: 2, oldest: 9_000 });
    await gauge(a.id, "default", bin + 5 * MIN, { shard: 3, due: 1, waiting: 1, inFlight: 1, dead: 0, oldest: 20_000 }); // another shard, same minute: summed (oldest: the largest)
    await stat(a.id, "default", bin + 2 * MIN, { succeeded: 3 });
    await stat(a.id, "default", now - 3 * 86_400_000, { dead: 7 });

    const day = await suite.h.client(a.apiKey).call("getStats", { query: { window: "24h" } });
    if (!day.ok) throw new Error(`expected success, got ${day.status}`);
    expect(day.body).toMatchObject({ window: "24h", binSeconds: 900 });
    expect(day.body.bins).toHaveLength(96);
    expect(Date.parse(day.body.from) % q15).toBe(0);
    expect(Date.parse(day.body.to)).toBeGreaterThan(now);
    expect(Date.parse(day.body.to) - q15).toBeLessThanOrEqual(now);
    const i = day.body.bins.findIndex((x) => Date.parse(x.at) === bin);
    expect(day.body.bins[i]).toMatchObject({ succeeded: 3, dlq: 2 });
    expect(day.body.queues[0]!.points[i]).toEqual({ at: new Date(bin).toISOString(), due: 6, waiting: 7, inFlight: 1, oldestDueAgeMs: 20_000 });
    expect(day.body.bins.reduce((n, x) => n + x.dead, 0)).toBe(0);

    const week = await suite.h.client(a.apiKey).call("getStats", { query: { window: "7d" } });
    if (!week.ok) throw new Error("expected success");
    expect(week.body).toMatchObject({ window: "7d", binSeconds: 7_200 });
    expect(week.body.bins).toHaveLength(84);
    expect(Date.parse(week.body.from) % 7_200_000).toBe(0);
    expect(week.body.bins.reduce((n, x) => n + x.dead, 0)).toBe(7);
    expect(week.body.bins.reduce((n, x) => n + x.succeeded, 0)).toBe(3);
  });

  it("dependencies: the 5 with the most finished jobs in the window, most first, with dead / finished per bin; no dependency is left out", async () => {
    const a = await suite.h.createTenant();
    const current = Math.floor((await dbNow()) / MIN) * MIN;
    for (const [dep, n] of [["d1", 10], ["d2", 20], ["d3", 30], ["d4", 40], ["d5", 50], ["d6", 5]] as const) {
      await stat(a.id, "default", current - 3 * MIN, { dep, succeeded: n - 2, dead: 2 });
    }
    await stat(a.id, "default", current - 4 * MIN, { dep: "d1", succeeded: 0, dead: 1 });
    await stat(a.id, "default", current - 3 * MIN, { succeeded: 1_000 }); // no dependency
    const res = await suite.h.client(a.apiKey).call("getStats", {});
    if (!res.ok) throw new Error("expected success");
    expect(res.body.window).toBe("1h");
    expect(res.body.dependencies.map((d) => d.key)).toEqual(["d5", "d4", "d3", "d2", "d1"]);
    const d1 = res.body.dependencies[4]!;
    expect(d1.points).toHaveLength(60);
    expect(d1.points[56]).toEqual({ at: new Date(current - 3 * MIN).toISOString(), finished: 10, dead: 2, failureRate: 0.2 });
    expect(d1.points[55]).toMatchObject({ finished: 1, dead: 1, failureRate: 1 });
    expect(d1.points[0]).toMatchObject({ finished: 0, dead: 0, failureRate: null });
  });

  it("breaker openings: the tenant's own (breakers are per tenant), per dependency and bin", async () => {
    const a = await suite.h.createTenant();
    const b = await suite.h.createTenant();
    const current = Math.floor((await dbNow()) / MIN) * MIN;
    const opened = (dependency: string, tenantId: string, at: number) =>
      suite.h.prisma.$executeRawUnsafe(
        `INSERT INTO breaker_openings (dependency_key, tenant_id, opened_at, open_until) VALUES ($1, $2::uuid, $3, $3::timestamptz + interval '30 seconds')`,
        dependency,
        tenantId,
        new Date(at),
      );
    await opened("pay.example", a.id, current - 5 * MIN + 1_000);
    await opened("pay.example", a.id, current - 5 * MIN + 40_000);
    await opened("pay.example", a.id, current - 3 * MIN);
    await opened("mail.example", a.id, current - MIN);
    await opened("pay.example", a.id, current - 90 * MIN); // outside the hour: only in the longer windows
    await opened("pay.example", b.id, current - 2 * MIN); // b's own breaker for the same dependency
    await opened("b-only.example", b.id, current - 2 * MIN);

    const res = await suite.h.client(a.apiKey).call("getStats", { query: { window: "1h" } });
    if (!res.ok) throw new Error("expected success");
    const byKey = Object.fromEntries(res.body.breakerOpenings.map((d) => [d.key, d.points]));
    expect(Object.keys(byKey)).toEqual(["mail.example", "pay.example"]);
    expect(byKey["pay.example"]).toHaveLength(60);
    expect(byKey["pay.example"]![54]).toEqual({ at: new Date(current - 5 * MIN).toISOString(), openings: 2 });
    expect(byKey["pay.example"]![56]).toEqual({ at: new Date(current - 3 * MIN).toISOString(), openings: 1 });
    expect(byKey["pay.example"]!.reduce((n, p) => n + p.openings, 0)).toBe(3);
    expect(byKey["mail.example"]![58]!.openings).toBe(1);

    const other = await suite.h.client(b.apiKey).call("getStats", { query: { window: "1h" } });
    if (!other.ok) throw new Error("expected success");
    expect(other.body.breakerOpenings.map((d) => [d.key, d.points.reduce((n, p) => n + p.openings, 0)])).toEqual([["b-only.example", 1], ["pay.example", 1]]);
    const day = await suite.h.client(a.apiKey).call("getStats", { query: { window: "24h" } });
    if (!day.ok) throw new Error("expected success");
    expect(day.body.breakerOpenings.find((d) => d.key === "pay.example")!.points.reduce((n, p) => n + p.openings, 0)).toBe(4);
  });

  it("refuses an unknown window (422) and needs jobs:read", async () => {
    const a = await suite.h.createTenant();
    const bad = await suite.h.client(a.apiKey).call("getStats", { query: { window: "2h" as "1h" } });
    expect(bad.status).toBe(422);
    if (bad.ok) throw new Error("expected a problem");
    expect(bad.problem.type).toBe(problemType("validation_failed"));
    const reader = await suite.h.addKey(a.id, ["jobs:read"]);
    expect((await suite.h.client(reader.apiKey).call("getStats", { query: { window: "7d" } })).status).toBe(200);
    const queuesOnly = await suite.h.addKey(a.id, ["queues:read"]);
    expect((await suite.h.client(queuesOnly.apiKey).call("getStats", {})).status).toBe(403);
  });
});

itConformsToOpenApi(suite);
