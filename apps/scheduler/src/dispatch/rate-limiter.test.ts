import { describe, expect, it } from "vitest";
import { RateLimiter } from "./rate-limiter.js";

/** Takes everything available every `stepMs` for `durationMs`; returns what was taken, with its time. */
function drain(limiter: RateLimiter, clock: { t: number }, stepMs: number, durationMs: number) {
  const log: { at: number; n: number }[] = [];
  for (const end = clock.t + durationMs; clock.t < end; clock.t += stepMs) {
    const n = limiter.available();
    limiter.take(n);
    if (n > 0) log.push({ at: clock.t, n });
  }
  return log;
}

/** The most taken in any window of `windowMs` (every window starting at a take). */
const maxInWindow = (log: { at: number; n: number }[], windowMs: number) =>
  Math.max(...log.map((a) => log.filter((b) => b.at >= a.at && b.at < a.at + windowMs).reduce((s, b) => s + b.n, 0)));

describe("RateLimiter", () => {
  it.each([
    [200, 100],
    [200, 37],
    [2000, 100],
    [50, 100],
  ])("never lets more than the rate (%i/s) through in any one-second window, polled every %i ms, and keeps up with it", (rate, step) => {
    const clock = { t: 0 };
    const limiter = new RateLimiter(rate, () => clock.t);
    const log = drain(limiter, clock, step, 30_000);
    expect(maxInWindow(log, 1000)).toBeLessThanOrEqual(rate);
    const total = log.reduce((s, l) => s + l.n, 0);
    // The window (plus its margin) is judged at the polls, so a little of the rate is lost between them.
    expect(total / 30).toBeGreaterThan(rate * 0.85);
  });

  it("no burst after an idle spell: at most a pace's burst at once, and the first second is capped too", () => {
    const clock = { t: 0 };
    const limiter = new RateLimiter(100, () => clock.t);
    clock.t = 60_000;
    // 100 ms of the pace (100 per 1,050 ms: 9.5 units) and one: 10 whole units.
    expect(limiter.available()).toBe(10);
    limiter.take(10);
    expect(limiter.available()).toBe(0);
    const log = drain(limiter, clock, 10, 1000);
    expect(log.reduce((s, l) => s + l.n, 0) + 10).toBeLessThanOrEqual(100);
  });

  it.each([
    [2000, 5],
    [2000, 20],
    [200, 5],
  ])("paces a backlog (%i/s, polled every %i ms): no gap between releases much longer than a unit's share of the window, after the first second", (rate, step) => {
    const clock = { t: 0 };
    const limiter = new RateLimiter(rate, () => clock.t);
    const log = drain(limiter, clock, step, 10_000).filter((l) => l.at >= 1_100);
    const gaps = log.slice(1).map((l, i) => l.at - log[i]!.at);
    // A unit accrues every 1,050 / rate ms; a release waits at most for that and the next poll.
    expect(Math.max(...gaps)).toBeLessThanOrEqual(Math.ceil(1050 / rate / step) * step + step);
    // Nor does one release carry more than a poll's worth of units (plus the one that was accruing).
    expect(Math.max(...log.map((l) => l.n))).toBeLessThanOrEqual(Math.ceil((rate * step) / 1000) + 1);
  });

  it("below one per second, one unit per 1/rate seconds", () => {
    const clock = { t: 0 };
    const limiter = new RateLimiter(0.5, () => clock.t);
    const log = drain(limiter, clock, 100, 20_000);
    expect(log.reduce((s, l) => s + l.n, 0)).toBeGreaterThanOrEqual(9);
    expect(maxInWindow(log, 2000)).toBe(1);
  });

  it("a rate of zero releases nothing; a new rate applies at once", () => {
    const clock = { t: 0 };
    const limiter = new RateLimiter(0, () => clock.t);
    expect(limiter.available()).toBe(0);
    limiter.setRate(10);
    expect(limiter.available()).toBeGreaterThanOrEqual(1);
    const log = drain(limiter, clock, 50, 10_000);
    expect(log.reduce((s, l) => s + l.n, 0)).toBeGreaterThanOrEqual(85);
  });
});
