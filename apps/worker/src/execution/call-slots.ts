/**
 * A counting gate for the worker's attempts: at most `size` hold a slot at once. The worker has two, each
 * `WORKER_CONCURRENCY` wide: start slots (the start statement and the wait for a call) and call slots (the
 * call). Waiters are served lowest `rank` first, then in arrival order: the dispatcher's fair rank (a quiet
 * tenant's attempt outranks the hundredth of a noisy one) holds inside the worker too.
 */
export interface CallSlots {
  /** Resolves with a release function once a slot is free; release is idempotent. */
  acquire(rank?: number): Promise<() => void>;
  readonly inUse: number;
  readonly waiting: number;
}

export function createCallSlots(size: number): CallSlots {
  let inUse = 0;
  let arrivals = 0;
  // Few waiters (at most the messages held beyond the slots): a sorted array is enough.
  const waiters: { rank: number; seq: number; grant: () => void }[] = [];

  const releaser = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = waiters.shift();
      if (next) next.grant();
      else inUse -= 1;
    };
  };

  return {
    acquire(rank = 0) {
      if (inUse < size) {
        inUse += 1;
        return Promise.resolve(releaser());
      }
      return new Promise((resolve) => {
        const waiter = { rank, seq: arrivals++, grant: () => resolve(releaser()) };
        let i = waiters.length;
        while (i > 0 && (waiters[i - 1]!.rank > rank || (waiters[i - 1]!.rank === rank && waiters[i - 1]!.seq > waiter.seq))) i--;
        waiters.splice(i, 0, waiter);
      });
    },
    get inUse() {
      return inUse;
    },
    get waiting() {
      return waiters.length;
    },
  };
}
