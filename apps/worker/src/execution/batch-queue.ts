/**
 * Collects items that many concurrent callers submit and runs them together: a flush happens
 * `flushMs` after the first item of a batch arrived, or at once when `maxBatch` items are waiting
 * (River's job completer, graphile-worker's batched completion). Each caller awaits its own item's
 * result, which settles only after the batch statement returned (it is one autocommit statement, so
 * it has committed). A batch that fails is not dropped: every item is taken again through `runOne`,
 * one by one, so one bad row or a cut connection costs only that item its result.
 */
export interface BatchQueueOptions<In, Out> {
  flushMs: number;
  maxBatch: number;
  /** One statement for all items; one result per item, in order. */
  runBatch: (items: In[]) => Promise<Out[]>;
  /** The fallback for the items of a failed batch. */
  runOne: (item: In) => Promise<Out>;
  /** Told of each failed batch (before its items are retried one by one). */
  onBatchError?: (err: unknown, size: number) => void;
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
  let waiting: Waiting<In, Out>[] = [];
  let timer: NodeJS.Timeout | undefined;
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

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return;
    const run = (async () => {
      let results: Out[];
      try {
        results = await options.runBatch(batch.map((w) => w.item));
        if (results.length !== batch.length) throw new Error(`batch returned ${results.length} results for ${batch.length} items`);
      } catch (err) {
        options.onBatchError?.(err, batch.length);
        await settleOneByOne(batch);
        return;
      }
      batch.forEach((w, i) => w.resolve(results[i]!));
    })();
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run));
  };

  return {
    submit(item) {
      return new Promise<Out>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        if (waiting.length >= options.maxBatch) flush();
        else timer ??= setTimeout(flush, options.flushMs);
      });
    },
    async drain() {
      flush();
      await Promise.all([...inFlight]);
    },
  };
}
