import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startSink, waitFor } from "@tick/testing";
import { createProcessWorld, metricValue, type ProcessWorld } from "./harness.js";

let w: ProcessWorld;
let down: Awaited<ReturnType<typeof startSink>>;
let healthy: Awaited<ReturnType<typeof startSink>>;
beforeEach(async () => {
  w = await createProcessWorld();
  down = await startSink();
  healthy = await startSink();
});
afterEach(async () => {
  await w?.close();
  await down?.close();
  await healthy?.close();
});

const startedAttempts = async (w: ProcessWorld, urlPrefix: string) =>
  (
    await w.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.url LIKE $1 AND a.started_at IS NOT NULL`,
      [`${urlPrefix}%`],
    )
  ).rows[0]!.n;

describe("circuit breaker per dependency (S11)", () => {
  it("opens for a failing dependency, stops burning its attempts, keeps others flowing, and closes after recovery", async () => {
    await w.startScheduler();
    const worker = await w.startWorker({ BREAKER_MIN_REQUESTS: "4", BREAKER_OPEN_FOR: "1s", BREAKER_WINDOW: "30s", BREAKER_RETRY_BUDGET: "1" });
    let recovered = false;
    down.respond(() => ({ status: recovered ? 200 : 503 }));
    const t = await w.createTenant();
    const failing: string[] = [];
    for (let i = 0; i < 20; i++) failing.push(await w.createJob(t, down.url(`/pay/${i}`), { maxAttempts: 100 }));

    await waitFor(async () => (await metricValue(worker.healthPort, "tick_breaker_opened_total")) >= 1, { timeoutMs: 20_000, description: "breaker opened" });
    // The opening's row is written just after the counter moves (a separate round trip): wait for it too.
    await waitFor(async () => (await w.pool.query(`SELECT 1 FROM breaker_openings`)).rowCount! >= 1, { timeoutMs: 5_000, description: "breaker opening recorded" });
    // The opening is kept for the console's chart: the dependency, the tenant and job whose outcome opened it, and
    // when it half-opens (1 s after it opened, by the breaker's clock).
    const openings = (
      await w.pool.query<{ dependency_key: string; tenant_id: string; job_id: string; open_ms: number }>(
        `SELECT dependency_key, tenant_id::text, job_id::text, extract(epoch FROM open_until - opened_at) * 1000 AS open_ms FROM breaker_openings`,
      )
    ).rows;
    expect(openings.length).toBeGreaterThanOrEqual(1);
    expect(openings[0]).toMatchObject({ dependency_key: new URL(down.url("")).host, tenant_id: t.id });
    expect(failing).toContain(openings[0]!.job_id);
    // Written just after it opened: open_until − opened_at is the 1 s open period less that delay.
    expect(Number(openings[0]!.open_ms)).toBeGreaterThan(0);
    expect(Number(openings[0]!.open_ms)).toBeLessThanOrEqual(1_050);

    // While it is open, the healthy dependency's jobs keep flowing ...
    const fine: string[] = [];
    for (let i = 0; i < 10; i++) fine.push(await w.createJob(t, healthy.url(`/mail/${i}`)));
    await waitFor(async () => (await Promise.all(fine.map((id) => w.job(id)))).every((j) => j.status === "succeeded"), {
      timeoutMs: 20_000,
      description: "the healthy dependency's jobs succeeded",
    });
    // ... and over three seconds of outage the failing one only sees its half-open probes, not 20 jobs retrying every 100 ms.
    // (Counted from here: attempts admitted just before the breaker opened have started by now, however slow the machine.)
    const atOpen = await startedAttempts(w, down.url(""));
    await new Promise((r) => setTimeout(r, 3_000));
    const duringOutage = (await startedAttempts(w, down.url(""))) - atOpen;
    expect(duringOutage).toBeLessThanOrEqual(6);
    for (const id of failing) expect(["scheduled", "dispatched", "running"]).toContain((await w.job(id)).status);

    recovered = true;
    await waitFor(async () => (await Promise.all(failing.map((id) => w.job(id)))).every((j) => j.status === "succeeded"), {
      timeoutMs: 30_000,
      description: "the failing dependency's jobs succeeded after recovery",
    });
    const attemptsPerJob = await Promise.all(failing.map((id) => w.job(id)));
    // At most a failed attempt and a successful one per job, plus a few probes: without the breaker,
    // 20 jobs retrying every 100 ms through a multi-second outage would have used hundreds.
    expect(attemptsPerJob.reduce((sum, j) => sum + j.attempt_count, 0)).toBeLessThanOrEqual(20 * 2 + 10);
  });
});
