/**
 * Collects items that many concurrent callers submit and runs them together, as a group commit does
 * (River's job completer, graphile-worker's batched completion): an item goes out at once when no batch
 * is in flight (at the end of the current event-loop turn, so items submitted together share it), and
 * items that arrive while `maxInFlight` batches are running wait for one of them to return and then go
 * out together, up to `maxBatch` per statement. Nothing waits on a timer unless `lingerMs` asks for it:
 * an idle worker pays one statement's latency, a busy one gets large batches. Each caller awaits its own
 * item's result, which settles only after the batch statement returned (it is one autocommit statement,
 * so it has committed). A batch that fails is not dropped: every item is taken again through `runOne`,
 * one by one, so one bad row or a cut connection costs only that item its result (unless `retryOneByOne`
 * says the failure leaves the batch's fate unknown: then every item is answered with the batch's error).
 */
export interface BatchQueueOptions<In, Out> {
  /** Most items per batch statement. */
  maxBatch: number;
  /** Batches allowed in flight at once (default 1); more items wait for one to return. */
  maxInFlight?: number;
  /** How long the first item of a batch waits for others even when a batch could go out (default 0). */
  lingerMs?: number;
  /** One statement for all items; one result per item, in order. */
  runBatch: (items: In[]) => Promise<Out[]>;
  /** The fallback for the items of a failed batch. */
  runOne: (item: In) => Promise<Out>;
  /** Told of each failed batch (before its items are retried one by one). */
  onBatchError?: (err: unknown, size: number) => void;
  /**
   * Whether a failed batch's items are retried one by one (default: always). False for an error that may
   * have come after the batch took effect (a connection cut during COMMIT): its items get that error.
   */
  retryOneByOne?: (err: unknown) => boolean;
}

export interface BatchQueue<In, Out> {
  submit(item: In): Promise<Out>;
  /** Flushes what is waiting and resolves once every batch submitted so far has settled. */
  drain(): Promise<void>;
}

interface Waiting<In, Out> {
  item: In;
  resolve: (out: Out) => void;
  reject: (err: unknown) => void;
}

export function createBatchQueue<In, Out>(options: BatchQueueOptions<In, Out>): BatchQueue<In, Out> {
  const maxInFlight = Math.max(1, options.maxInFlight ?? 1);
  const lingerMs = options.lingerMs ?? 0;
  const waiting: Waiting<In, Out>[] = [];
  /** A flush is already planned (end of this turn, or the linger timer). */
  let planned: NodeJS.Timeout | NodeJS.Immediate | undefined;
  const inFlight = new Set<Promise<void>>();

  const settleOneByOne = async (batch: Waiting<In, Out>[]) => {
    for (const w of batch) {
      try {
        w.resolve(await options.runOne(w.item));
      } catch (err) {
        w.reject(err);
      }
    }
  };

  const run = (batch: Waiting<In, Out>[]) => {
    const flight = (async () => {
      let results: Out[];
      try {
        results = await options.runBatch(batch.map((w) => w.item));
        if (results.length !== batch.length) throw new Error(`batch returned ${results.length} results for ${batch.length} items`);
      } catch (err) {
        options.onBatchError?.(err, batch.length);
        if (options.retryOneByOne && !options.retryOneByOne(err)) for (const w of batch) w.reject(err);
        else await settleOneByOne(batch);
        return;
      }
      batch.forEach((w, i) => w.resolve(results[i]!));
    })();
    inFlight.add(flight);
    void flight.finally(() => {
      inFlight.delete(flight);
      // What gathered meanwhile goes out now, together.
      if (waiting.length > 0) plan();
    });
  };

  /** Sends as many batches as the in-flight limit allows; the rest keep waiting. */
  const flush = (force = false) => {
    planned = undefined;
    while (waiting.length > 0 && (force || inFlight.size < maxInFlight)) run(waiting.splice(0, options.maxBatch));
  };

  const cancelPlanned = () => {
    clearTimeout(planned as NodeJS.Timeout);
    clearImmediate(planned as NodeJS.Immediate);
    planned = undefined;
  };

  const plan = () => {
    if (planned !== undefined || inFlight.size >= maxInFlight) return;
    planned = lingerMs > 0 ? setTimeout(flush, lingerMs) : setImmediate(flush);
  };

  return {
    submit(item) {
      return new Promise<Out>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        // A full batch need not wait for the linger; it still respects the in-flight limit.
        if (waiting.length >= options.maxBatch && inFlight.size < maxInFlight) {
          cancelPlanned();
          flush();
        } else plan();
      });
    },
    async drain() {
      cancelPlanned();
      flush(true);
      while (inFlight.size > 0) {
        await Promise.all([...inFlight]);
        flush(true);
      }
    },
  };
}
