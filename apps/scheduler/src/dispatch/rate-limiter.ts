/**
 * How fast this scheduler releases work (catch-up after an outage, S12; outbox drain, S10): at most
 * `ratePerSecond` in any window of one second (a sliding window over what was taken, plus a small margin for
 * the gap between this process's clock and the database timestamps the release is judged by). A token
 * bucket holding a second's worth would let up to twice the rate through in a second after an idle spell,
 * and rounds falling unevenly would let 10% more through in many calendar seconds.
 *
 * Within that cap the release is paced: units accrue at the window's rate, and at most `burstMs` of
 * them are held, so a backlog goes out a few units every round instead of a whole window's worth at once
 * followed by a stall until the window slides. Without the pace, a scheduler at its cap would release about
 * 200 attempts every 100 ms (the broker queue's room), and a quiet tenant's job that fell due in a stall
 * would wait for the next release: 96 ms p99 from due to claimed under the fairness burst, with 1,209 of
 * 1,844 rounds held by the rate.
 */
export class RateLimiter {
  private readonly taken: { at: number; n: number }[] = [];
  /** Paced units ready to go (fractional: they accrue continuously). */
  private tokens: number;
  private refilledAt: number;

  constructor(
    private ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
    private readonly marginMs = 50,
    /**
     * The most a paced release holds back: what accrues in this long (at least one unit). It covers the gap
     * between two rounds under load; a longer gap releases less than the rate.
     */
    private readonly burstMs = 100,
  ) {
    this.refilledAt = this.now();
    this.tokens = this.burst();
  }

  setRate(ratePerSecond: number): void {
    this.refill();
    this.ratePerSecond = ratePerSecond;
    this.tokens = Math.min(this.tokens, this.burst());
  }

  /** Whole units that may be taken now. */
  available(): number {
    if (this.ratePerSecond <= 0) return 0;
    const { limit, windowMs } = this.window();
    const since = this.now() - windowMs;
    while (this.taken.length > 0 && this.taken[0]!.at <= since) this.taken.shift();
    const used = this.taken.reduce((sum, t) => sum + t.n, 0);
    const inWindow = Math.max(0, limit - used);
    this.refill();
    // What the window holds back does not pile up as paced units: once the window slides, the release
    // resumes at the pace, not with a burst that would hit the window again a window later (one unit is
    // kept, so a slow rate whose window and pace free a unit at the same moment loses nothing).
    this.tokens = Math.min(this.tokens, inWindow + 1);
    return Math.floor(Math.min(inWindow, this.tokens + 1e-9));
  }

  take(n: number): void {
    if (n <= 0) return;
    this.refill();
    this.tokens = Math.max(0, this.tokens - n);
    this.taken.push({ at: this.now(), n });
  }

  /** Below 1/s the window stretches so that one unit per 1/rate seconds still gets through. */
  private window(): { limit: number; windowMs: number } {
    const windowMs = Math.max(1000, 1000 / this.ratePerSecond) + this.marginMs;
    const limit = Math.max(1, Math.floor((this.ratePerSecond * (windowMs - this.marginMs)) / 1000));
    return { limit, windowMs };
  }

  /** Units per ms: the window's limit spread over the window, so the pace alone never fills it. */
  private pace(): number {
    if (this.ratePerSecond <= 0) return 0;
    const { limit, windowMs } = this.window();
    return limit / windowMs;
  }

  /** Plus one unit: whole units are taken, and a bucket full to the unit would lose the fraction left over. */
  private burst(): number {
    return Math.max(1, this.pace() * this.burstMs) + 1;
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(this.burst(), this.tokens + Math.max(0, now - this.refilledAt) * this.pace());
    this.refilledAt = now;
  }
}
