/**
 * How fast this scheduler releases work (catch-up after an outage, S12; outbox drain, S10): at most
 * `ratePerSecond` in any window of one second (a sliding window over what was taken, plus a small margin for
 * the gap between this process's clock and the database timestamps the release is judged by). A token
 * bucket holding a second's worth let up to twice the rate through in a second after an idle spell, and
 * rounds falling unevenly let 10% more through in many calendar seconds.
 */
export class RateLimiter {
  private readonly taken: { at: number; n: number }[] = [];

  constructor(
    private ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
    private readonly marginMs = 50,
  ) {}

  setRate(ratePerSecond: number): void {
    this.ratePerSecond = ratePerSecond;
  }

  /** Whole units that may be taken now. */
  available(): number {
    if (this.ratePerSecond <= 0) return 0;
    // Below 1/s the window stretches so that one unit per 1/rate seconds still gets through.
    const windowMs = Math.max(1000, 1000 / this.ratePerSecond) + this.marginMs;
    const limit = Math.max(1, Math.floor((this.ratePerSecond * (windowMs - this.marginMs)) / 1000));
    const since = this.now() - windowMs;
    while (this.taken.length > 0 && this.taken[0]!.at <= since) this.taken.shift();
    const used = this.taken.reduce((sum, t) => sum + t.n, 0);
    return Math.max(0, limit - used);
  }

  take(n: number): void {
    if (n > 0) this.taken.push({ at: this.now(), n });
  }
}
