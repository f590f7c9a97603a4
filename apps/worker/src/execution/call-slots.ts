/**
 * A counting gate for the worker's attempts: at most `size` hold a slot at once. The worker has two, each
 * `WORKER_CONCURRENCY` wide: start slots (the start statement and the wait for a call) and call slots (the
 * call). Waiters are served lowest `rank` first, then in arrival order: the dispatcher's fair rank (a quiet
 * tenant's attempt outranks the hundredth of a noisy one) holds inside the worker too.
 *
 * The gate also keeps its own occupancy over time: slot-seconds held and attempt-seconds spent waiting,
 * both exact (integrated at every change). Their rates are the mean slots busy and the mean attempts
 * waiting over any window, the worker's saturation as tick_worker_slots_busy_seconds_total reports it.
 */
export interface CallSlots {
  /** Resolves with a release function once a slot is free; release is idempotent. */
  acquire(rank?: number): Promise<() => void>;
  readonly size: number;
  readonly inUse: number;
  readonly waiting: number;
  /** Slot-seconds held and attempt-seconds waited since the gate was made, up to now. */
  totals(): { busySeconds: number; waitingSeconds: number };
}

export function createCallSlots(size: number, now: () => number = () => performance.now()): CallSlots {
  let inUse = 0;
  let arrivals = 0;
  // Few waiters (at most the messages held beyond the slots): a sorted array is enough.
  const waiters: { rank: number; seq: number; grant: () => void }[] = [];
  // Occupancy integrals, in slot-milliseconds and waiter-milliseconds, brought up to date before each change.
  let busyMs = 0;
  let waitingMs = 0;
  let last = now();
  const advance = () => {
    const t = now();
    busyMs += inUse * (t - last);
    waitingMs += waiters.length * (t - last);
    last = t;
  };

  const releaser = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      advance();
      const next = waiters.shift();
      if (next) next.grant();
      else inUse -= 1;
    };
  };

  return {
    acquire(rank = 0) {
      advance();
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
    size,
    get inUse() {
      return inUse;
    },
    get waiting() {
      return waiters.length;
    },
    totals() {
      advance();
      return { busySeconds: busyMs / 1000, waitingSeconds: waitingMs / 1000 };
    },
  };
}
