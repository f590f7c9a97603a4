import type { ApiResult } from "@tick/client";
import { problemType } from "@tick/core";
import type { Random } from "../random.js";
import type { ChaosSink } from "../sink.js";
import type { Op, OpKind, Tenant } from "../workload.js";

/** How one create request ended, as the client saw it. */
export type TryOutcome =
  | "acknowledged" // 201, or 200 for a replayed Idempotency-Key
  | "database_unavailable" // 503 problem+json, nothing was created
  | "outcome_unknown" // 503 problem+json, the connection broke during COMMIT
  | "bad_503" // a 503 that is not one of the above (no problem+json, no stable type or no Retry-After)
  | "connection_error" // the console did not answer (refused, reset)
  | "timeout" // no answer within the client's timeout: a hang
  | "server_error" // 500 or any other 5xx
  | "other"; // any other status (4xx): the workload is valid, so none is expected

export interface CreateTry {
  key: string;
  sentAt: number;
  doneAt: number;
  outcome: TryOutcome;
  status: number | null;
  detail?: string;
}

/** A client gives up on one request after this long (the console must answer 503 well before). */
const CLIENT_TIMEOUT_MS = 15_000;

const OK_503 = new Map<string, TryOutcome>([
  [problemType("database_unavailable"), "database_unavailable"],
  [problemType("outcome_unknown"), "outcome_unknown"],
]);

/** A fetch that gives up after CLIENT_TIMEOUT_MS, for the tenant's client. */
export const fetchWithTimeout: typeof fetch = (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A steady stream of creates through the public API, as a careful client sends them: each with an
 * Idempotency-Key, retried with that key (honouring Retry-After, capped at 1 s) until acknowledged. A new
 * job starts every `intervalMs` whatever the outage, so the first success after a failover is seen within
 * one interval. Jobs: immediate, delayed by 1-4 s (falling due across the failover) and slow (running
 * 1.5-3 s at the sink, so attempts are in flight when the primary dies). Every try is recorded.
 */
export function startCreateLoad(options: { tenant: Tenant; sink: ChaosSink; random: Random; intervalMs: number; maxOutstanding: number }) {
  const { tenant, sink, random } = options;
  const ops: Op[] = [];
  const tries: CreateTry[] = [];
  let phase = "warm-up";
  let stopped = false;
  let outstanding = 0;
  let seq = 0;
  const KINDS: OpKind[] = ["ok", "delayed", "slow", "ok"];

  const body = (kind: OpKind, key: string, delayMs?: number) => {
    const cls = kind === "slow" ? "slow" : "ok";
    return {
      target: { url: sink.url(`/${cls}/${key}`), timeoutMs: 10_000 },
      dependencyKey: `sink-${cls}`,
      maxAttempts: 25,
      backoff: { strategy: "exponential" as const, baseMs: 200, maxMs: 2_000, jitter: "full" as const },
      metadata: { kind, phase },
      ...(delayMs === undefined ? {} : { delayMs }),
    };
  };

  async function classify(key: string, sentAt: number, call: () => Promise<ApiResult<"createJob">>): Promise<{ t: CreateTry; jobId?: string; retryAfter: number }> {
    try {
      const res = await call();
      const doneAt = Date.now();
      if (res.ok) return { t: { key, sentAt, doneAt, outcome: "acknowledged", status: res.status }, jobId: res.body.id, retryAfter: 0 };
      const retryAfter = Number(res.headers.get("retry-after") ?? 0);
      if (res.status === 503) {
        const type = (res.problem as { type?: string } | undefined)?.type ?? ""; // a 503 from a proxy may have no body
        const contentType = res.headers.get("content-type") ?? "";
        const known = OK_503.get(type);
        const outcome = known && contentType.startsWith("application/problem+json") && retryAfter > 0 ? known : "bad_503";
        return { t: { key, sentAt, doneAt, outcome, status: 503, detail: `${contentType} ${type} retry-after ${res.headers.get("retry-after")}` }, retryAfter };
      }
      const outcome: TryOutcome = res.status >= 500 ? "server_error" : "other";
      return { t: { key, sentAt, doneAt, outcome, status: res.status, detail: JSON.stringify(res.problem).slice(0, 300) }, retryAfter };
    } catch (err) {
      const doneAt = Date.now();
      const e = err as { name?: string; message?: string; cause?: { code?: string } };
      const outcome: TryOutcome = e.name === "TimeoutError" ? "timeout" : "connection_error";
      return { t: { key, sentAt, doneAt, outcome, status: null, detail: `${e.name}: ${e.message} ${e.cause?.code ?? ""}` }, retryAfter: 0 };
    }
  }

  async function create(kind: OpKind): Promise<void> {
    const key = `${tenant.name}-${kind}-${++seq}`;
    const delayMs = kind === "delayed" ? random.int(1_000, 4_000) : undefined;
    const op: Op = { key, tenant: tenant.name, kind, phase, createdAt: Date.now(), jobId: null, createRetries: 0, cancel: null, ...(delayMs === undefined ? {} : { delayMs }) };
    ops.push(op);
    outstanding++;
    try {
      for (;;) {
        const { t, jobId, retryAfter } = await classify(key, Date.now(), () => tenant.client.call("createJob", { body: body(kind, key, delayMs), idempotencyKey: key }));
        tries.push(t);
        if (jobId) {
          op.jobId = jobId;
          op.ackedAt = t.doneAt;
          return;
        }
        op.createRetries++;
        if (stopped && op.createRetries > 100) return;
        await sleep(retryAfter > 0 ? Math.min(retryAfter * 1_000, 1_000) : 200 + random.int(0, 300));
      }
    } finally {
      outstanding--;
    }
  }

  const loop = (async () => {
    while (!stopped) {
      if (outstanding < options.maxOutstanding) void create(KINDS[seq % KINDS.length]!);
      await sleep(options.intervalMs);
    }
  })();

  return {
    ops,
    tries,
    setPhase(name: string) {
      phase = name;
    },
    get outstanding() {
      return outstanding;
    },
    /** Stops starting creates; waits (up to 60 s) for those in flight to be acknowledged. */
    async stop() {
      stopped = true;
      await loop;
      const deadline = Date.now() + 60_000;
      while (outstanding > 0 && Date.now() < deadline) await sleep(200);
    },
  };
}

export type CreateLoad = ReturnType<typeof startCreateLoad>;

export interface GapFigures {
  /** ms from the SIGKILL to the first acknowledgement of a create sent after it. */
  rtoMs: number | null;
  /** Tries that ended between the kill and the recovery, by outcome. */
  during: Record<TryOutcome, number>;
  /** Creates first sent during the outage that were acknowledged later (by a retry with their key). */
  acknowledgedAfterRetry: number;
  /** The slowest refusal during the gap (ms from request to answer): a 503 comes at once, not after a hang. */
  slowestRefusalMs: number | null;
}

const emptyCounts = (): Record<TryOutcome, number> => ({
  acknowledged: 0,
  database_unavailable: 0,
  outcome_unknown: 0,
  bad_503: 0,
  connection_error: 0,
  timeout: 0,
  server_error: 0,
  other: 0,
});

/** What the clients saw around one kill: RTO and every answer during the gap. */
export function measureGap(load: CreateLoad, killedAt: number): GapFigures {
  const firstAck = load.tries.filter((t) => t.sentAt > killedAt && t.outcome === "acknowledged").sort((a, b) => a.doneAt - b.doneAt)[0];
  const recoveredAt = firstAck?.doneAt ?? Infinity;
  const during = emptyCounts();
  // Answers after the kill and before the first success (a request sent before the kill may still be acknowledged).
  const gap = load.tries.filter((t) => t.doneAt >= killedAt && t.doneAt < recoveredAt);
  for (const t of gap) during[t.outcome]++;
  const refused = gap.filter((t) => t.outcome !== "acknowledged");
  const retried = new Set(refused.map((t) => t.key));
  const acknowledgedAfterRetry = load.ops.filter((o) => retried.has(o.key) && o.jobId).length;
  const slowestRefusalMs = refused.length ? Math.max(...refused.map((t) => t.doneAt - t.sentAt)) : null;
  return { rtoMs: firstAck ? firstAck.doneAt - killedAt : null, during, acknowledgedAfterRetry, slowestRefusalMs };
}

/** Every try of the whole run by outcome (a 500, a bad 503 or a hang anywhere is a failure). */
export function countOutcomes(tries: CreateTry[]): Record<TryOutcome, number> {
  const counts = emptyCounts();
  for (const t of tries) counts[t.outcome]++;
  return counts;
}
