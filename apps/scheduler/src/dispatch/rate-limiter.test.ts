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

  it("no burst after an idle spell: the first second is capped too", () => {
    const clock = { t: 0 };
    const limiter = new RateLimiter(100, () => clock.t);
    clock.t = 60_000;
    expect(limiter.available()).toBe(100);
    limiter.take(100);
    clock.t += 500;
    expect(limiter.available()).toBe(0);
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
    expect(limiter.available()).toBe(10);
  });
});
