// Scheduling lag (an attempt's start − its job's due time) as a fixed histogram: the scheduler's
// per-minute rollups count jobs into these buckets and the stats API merges buckets and reads percentiles
// from them, so both sides must use the same bounds.

/**
 * Exclusive upper bounds of the lag buckets, ms. Bucket i holds lags in [bound[i-1], bound[i]) (bucket 0
 * also holds negative lags); one more bucket, the last, holds everything from the last bound up.
 */
export const LAG_BUCKET_BOUNDS_MS: readonly number[] = [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000];

/** Buckets of a lag histogram: the finite ones and the open last one. */
export const LAG_BUCKET_COUNT = LAG_BUCKET_BOUNDS_MS.length + 1;

/** The bucket a lag falls in (as Postgres' width_bucket(lag, bounds) numbers them). */
export function lagBucket(lagMs: number): number {
  let i = 0;
  while (i < LAG_BUCKET_BOUNDS_MS.length && lagMs >= LAG_BUCKET_BOUNDS_MS[i]!) i++;
  return i;
}

/** Adds histograms bucket by bucket (missing buckets count as 0). */
export function mergeLagHistograms(histograms: readonly (readonly number[])[]): number[] {
  const merged = new Array<number>(LAG_BUCKET_COUNT).fill(0);
  for (const h of histograms) for (let i = 0; i < LAG_BUCKET_COUNT; i++) merged[i]! += h[i] ?? 0;
  return merged;
}

/**
 * The p-quantile (0 < p ≤ 1) of a histogram, as the upper bound of the bucket the quantile falls in; for the
 * open last bucket, the last finite bound (a lower bound of the truth). Null for an empty histogram.
 */
export function lagPercentileMs(histogram: readonly number[], p: number): number | null {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (let i = 0; i < LAG_BUCKET_COUNT; i++) {
    seen += histogram[i] ?? 0;
    if (seen >= rank) return LAG_BUCKET_BOUNDS_MS[Math.min(i, LAG_BUCKET_BOUNDS_MS.length - 1)]!;
  }
  return LAG_BUCKET_BOUNDS_MS[LAG_BUCKET_BOUNDS_MS.length - 1]!;
}
