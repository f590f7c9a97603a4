/**
 * A local token bucket: `ratePerSecond` refills continuously up to one second's worth. Used to bound
 * how fast this scheduler releases work (catch-up after an outage, S12; outbox drain, S10).
 */
export class RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = ratePerSecond;
    this.last = now();
  }

  setRate(ratePerSecond: number): void {
    this.refill();
    this.ratePerSecond = ratePerSecond;
    this.tokens = Math.min(this.tokens, this.capacity());
  }

  /** Whole tokens available now. */
  available(): number {
    this.refill();
    return Math.floor(this.tokens);
  }

  take(n: number): void {
    this.refill();
    this.tokens -= n;
  }

  private capacity(): number {
    // At least one token, so rates below 1/s still make progress.
    return Math.max(1, this.ratePerSecond);
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.capacity(), this.tokens + ((t - this.last) / 1000) * this.ratePerSecond);
    this.last = t;
  }
}
