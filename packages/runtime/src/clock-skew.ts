/**
 * Test only: shifts this process's wall clock (Date) by `ms`, as a host whose clock drifted would see
 * it (S13). Tick decides due times and leases by the database clock, so a skew within the documented
 * margin (SCHEDULER_LEASE_GRACE) must change nothing; the fault-injection suite checks that. Enabled
 * by TICK_TEST_CLOCK_SKEW_MS; `performance.now()` (monotonic) is left alone, as the OS leaves it.
 */
export function installClockSkew(ms: number): void {
  if (!ms) return;
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(realNow() + ms);
      else super(...(args as [string | number | Date]));
    }
    static override now(): number {
      return realNow() + ms;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
}
