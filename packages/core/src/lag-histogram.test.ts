import { describe, expect, it } from "vitest";
import { LAG_BUCKET_BOUNDS_MS, LAG_BUCKET_COUNT, lagBucket, lagPercentileMs, mergeLagHistograms } from "./lag-histogram.js";

const histogram = (lags: number[]) => {
  const h = new Array<number>(LAG_BUCKET_COUNT).fill(0);
  for (const l of lags) h[lagBucket(l)]!++;
  return h;
};

describe("lag histogram", () => {
  it("puts a lag in the bucket whose exclusive upper bound is the first above it; negatives in the first, the rest in the open last one", () => {
    expect(LAG_BUCKET_COUNT).toBe(14);
    expect([-5, 0, 9, 10, 24, 25, 999, 1_000, 299_999, 300_000, 10_000_000].map(lagBucket)).toEqual([0, 0, 0, 1, 1, 2, 6, 7, 12, 13, 13]);
  });

  it("reads a percentile as its bucket's upper bound, the last finite bound for the open bucket, null when empty", () => {
    const h = histogram([5, 5, 5, 5, 5, 5, 5, 5, 700, 400_000]); // 8 under 10 ms, one in [500, 1000), one above 300 s
    expect(lagPercentileMs(h, 0.5)).toBe(10);
    expect(lagPercentileMs(h, 0.8)).toBe(10);
    expect(lagPercentileMs(h, 0.9)).toBe(1_000);
    expect(lagPercentileMs(h, 0.99)).toBe(300_000);
    expect(lagPercentileMs(histogram([]), 0.5)).toBeNull();
    expect(lagPercentileMs(histogram([30]), 0.01)).toBe(50);
  });

  it("merges bucket by bucket", () => {
    expect(mergeLagHistograms([histogram([1, 20]), histogram([20]), []])).toEqual(histogram([1, 20, 20]));
    expect(LAG_BUCKET_BOUNDS_MS).toEqual([...LAG_BUCKET_BOUNDS_MS].sort((a, b) => a - b));
  });
});
