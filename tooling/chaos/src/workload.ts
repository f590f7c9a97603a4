import { createTickClient, type TickClient } from "@tick/client";
import { generateApiKey, shardForTenant } from "@tick/db";
import type pg from "pg";
import { SHARDS } from "./cluster.js";
import type { Random } from "./random.js";
import type { ChaosSink } from "./sink.js";

/** What a job was created to do, and so what it must end as. */
export type OpKind = "quiet" | "ok" | "delayed" | "slow" | "dep" | "dlq" | "fail" | "cancel" | "burst" | "capped" | "rated" | "debounced";

/**
 * The keyed tenant's queues: a per-key cap, a per-key rate, and debounced creates (the checker reads the same
 * figures). Each debounce key has its own loop of creates, one at a time, each `gapMs` after the last was
 * acknowledged: dt-0's come faster than its period (its window runs at maxWait), dt-1's sometimes fold and
 * sometimes let the window run after its period, dl-0's are leading.
 */
export const KEYED_QUEUES = {
  capped: { name: "capped", perKeyConcurrency: 2, keys: 4 },
  rated: { name: "rated", perKeyRate: { limit: 5, periodMs: 1_000 }, keys: 2 },
  debounced: {
    name: "debounced",
    keys: [
      { key: "dt-0", mode: "trailing", periodMs: 1_000, maxWaitMs: 3_000, gapMs: [100, 600] },
      { key: "dt-1", mode: "trailing", periodMs: 1_000, maxWaitMs: 3_000, gapMs: [300, 1_800] },
      { key: "dl-0", mode: "leading", periodMs: 1_000, gapMs: [100, 900] },
    ],
  },
} as const;

/** A debounce key of the workload, as KEYED_QUEUES.debounced lists them. */
export type DebounceKeyConfig = (typeof KEYED_QUEUES.debounced.keys)[number];

/** What a debounced create asked for and what its acknowledgement said. */
export interface DebounceAnswer {
  key: string;
  mode: "trailing" | "leading";
  /** Its place among its debounce key's creates (they are sent one at a time, so this is also their order at the API). */
  seq: number;
  /** The path its target names at the downstream: the payload that must run if this create is its window's latest (trailing) or first (leading). */
  path: string;
  /** The answer was an idempotent replay (of a create that reached the database on an earlier try). */
  replayed: boolean;
  /** The job's due time the answer showed (database clock, ms), when it was not a replay (a replay shows the job as it is now). */
  dueAt: number | null;
}

export interface Op {
  key: string;
  tenant: string;
  kind: OpKind;
  phase: string;
  createdAt: number;
  /** Set once the API acknowledged the create (201, or 200 for a replayed key). */
  jobId: string | null;
  /** When the acknowledgement came (Date.now()). */
  ackedAt?: number;
  /** Create attempts the API refused or that failed in transit before the acknowledgement. */
  createRetries: number;
  /**
   * For kind cancel: what the cancel answered (cancelled = no attempt ever started; cancelled_after_attempts =
   * `cancelAttemptsStarted` attempts had started; requested = it was running; finished = 409).
   */
  cancel: "cancelled" | "cancelled_after_attempts" | "requested" | "finished" | null;
  cancelAttemptsStarted?: number;
  /** The delay the job was created with (ms after creation it falls due). */
  delayMs?: number;
  /** For kind debounced: the debounce key, and the answer (jobId is the window's job, created or folded into). */
  debounce?: DebounceAnswer;
}

export interface Tenant {
  id: string;
  name: string;
  client: TickClient;
  /** Its API key (the log check looks for it in every process's output). */
  apiKey: string;
}

/**
 * Distinctive text in every job's request body and in a header of it: it must never reach a log line
 * (no request bodies or headers in the logs by default).
 */
export const BODY_MARKER = "chaos-body-7f3a9c1e-do-not-log";
export const HEADER_MARKER = "chaos-header-b81d02f4-do-not-log";

export async function createTenant(
  pool: pg.Pool,
  consoleUrl: string,
  name: string,
  limits: { admissionRate: number; admissionBurst: number; maxInFlight: number },
  options: { fetch?: typeof fetch; id?: string } = {},
): Promise<Tenant> {
  const id = options.id ?? crypto.randomUUID();
  await pool.query(
    `INSERT INTO tenants (id, slug, name, shard, admission_rate, admission_burst, max_in_flight, updated_at) VALUES ($1, $2, $2, $3, $4, $5, $6, now())`,
    [id, name, shardForTenant(id, SHARDS), limits.admissionRate, limits.admissionBurst, limits.maxInFlight],
  );
  await pool.query(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'default', now())`, [id]);
  const { key, prefix, hash } = generateApiKey();
  await pool.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes) VALUES (gen_random_uuid(), $1, 'chaos', $2, $3, ARRAY['admin'])`, [id, prefix, hash]);
  return { id, name, apiKey: key, client: createTickClient({ baseUrl: consoleUrl, apiKey: key, ...(options.fetch ? { fetch: options.fetch } : {}) }) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The mixed workload, through the public API like real tenants: a quiet tenant's steady trickle, a
 * normal tenant's mix (immediate, delayed, slow, a dependency that goes down, jobs that die, cancels),
 * a noisy tenant's bursts, a recurring schedule, and a DLQ replay. Every create carries an
 * Idempotency-Key and is retried with it until acknowledged, as a careful client does during an outage.
 */
export async function createWorkload(options: { pool: pg.Pool; consoleUrl: string; sink: ChaosSink; random: Random; log: (line: string) => void }) {
  const { pool, consoleUrl, sink, random, log } = options;
  const quiet = await createTenant(pool, consoleUrl, "quiet", { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 100 });
  const normal = await createTenant(pool, consoleUrl, "normal", { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 200 });
  const noisy = await createTenant(pool, consoleUrl, "noisy", { admissionRate: 20_000, admissionBurst: 20_000, maxInFlight: 200 });
  // A tenant isolating its own customers: one queue caps each flow key's calls in flight, one its rate.
  const keyed = await createTenant(pool, consoleUrl, "keyed", { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 200 });
  await pool.query(
    `INSERT INTO queues (id, tenant_id, name, per_key_concurrency, per_key_rate_limit, per_key_rate_period_ms, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, NULL, NULL, now()), (gen_random_uuid(), $1, $4, NULL, $5, $6, now())`,
    [keyed.id, KEYED_QUEUES.capped.name, KEYED_QUEUES.capped.perKeyConcurrency, KEYED_QUEUES.rated.name, KEYED_QUEUES.rated.perKeyRate.limit, KEYED_QUEUES.rated.perKeyRate.periodMs],
  );
  await pool.query(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES (gen_random_uuid(), $1, $2, now())`, [keyed.id, KEYED_QUEUES.debounced.name]);
  const tenants = { quiet, normal, noisy, keyed };
  const ops: Op[] = [];
  let phase = "setup";
  let stopped = false;
  let outstanding = 0;
  let seq = 0;
  const schedules: string[] = [];
  const replays: string[] = [];

  /** Drawn once per op, so a create retried with the same key sends the same body. */
  const delayFor = (kind: OpKind) => (kind === "delayed" ? random.int(2_000, 8_000) : kind === "cancel" ? random.int(500, 2_500) : undefined);
  /** A keyed op's flow key, drawn from its sequence number (so a retried create sends the same one). */
  const flowKeyOf = (kind: OpKind, n: number) => (kind === "capped" ? `ck-${n % KEYED_QUEUES.capped.keys}` : kind === "rated" ? `rk-${n % KEYED_QUEUES.rated.keys}` : undefined);
  const body = (kind: OpKind, key: string, delayMs?: number, flowKey?: string, debounce?: DebounceKeyConfig) => {
    const cls = kind === "dlq" ? "dep" : kind === "quiet" || kind === "burst" || kind === "delayed" || kind === "cancel" ? "ok" : kind;
    const path = flowKey ? `/${cls}/${flowKey}/${key}` : debounce ? `/${cls}/${debounce.key}/${key}` : `/${cls}/${key}`;
    return {
      target: { url: sink.url(path), timeoutMs: 10_000, headers: { "x-chaos-marker": HEADER_MARKER }, body: JSON.stringify({ marker: BODY_MARKER, key }) },
      ...(flowKey ? { queue: KEYED_QUEUES[kind as "capped" | "rated"].name, flowKey } : {}),
      ...(debounce
        ? {
            queue: KEYED_QUEUES.debounced.name,
            debounce: { key: debounce.key, periodMs: debounce.periodMs, mode: debounce.mode, ...("maxWaitMs" in debounce ? { maxWaitMs: debounce.maxWaitMs } : {}) },
          }
        : {}),
      // Signed completion webhooks for some jobs, so the tenant has a signing secret the log check looks for.
      ...(kind === "ok" ? { callbackUrl: sink.url(`/hook/${key}`) } : {}),
      // Debounced jobs by mode: a trailing window's due time moves with its creates (the start-lag check leaves them to the debounce check).
      dependencyKey: debounce ? `sink-${cls}-${debounce.mode}` : `sink-${cls}`,
      maxAttempts: kind === "dlq" ? 1 : kind === "fail" ? 3 : 25,
      backoff: { strategy: "exponential" as const, baseMs: 200, maxMs: 2_000, jitter: "full" as const },
      metadata: { kind, phase },
      ...(delayMs === undefined ? {} : { delayMs }),
    };
  };

  /** Creates one job, retrying with the same key until the API acknowledges it (or the run ends). */
  async function create(tenant: Tenant, kind: OpKind): Promise<Op> {
    const n = ++seq;
    const key = `${tenant.name}-${kind}-${n}`;
    const flowKey = flowKeyOf(kind, n);
    const delayMs = delayFor(kind);
    const op: Op = { key, tenant: tenant.name, kind, phase, createdAt: Date.now(), jobId: null, createRetries: 0, cancel: null, ...(delayMs === undefined ? {} : { delayMs }) };
    ops.push(op);
    outstanding++;
    try {
      for (;;) {
        const res = await tenant.client.call("createJob", { body: body(kind, key, delayMs, flowKey), idempotencyKey: key }).catch(() => null);
        if (res?.ok) {
          op.jobId = res.body.id;
          op.ackedAt = Date.now();
          return op;
        }
        op.createRetries++;
        if (stopped && op.createRetries > 50) return op;
        const retryAfter = Number(res?.headers.get("retry-after") ?? 0);
        await sleep(retryAfter > 0 ? Math.min(retryAfter * 1_000, 2_000) : 300 + random.int(0, 400));
      }
    } finally {
      outstanding--;
    }
  }

  async function cancelLater(op: Op) {
    await sleep(random.int(300, 3_000));
    if (!op.jobId) return;
    for (let tries = 0; tries < 20; tries++) {
      const res = await normal.client.call("cancelJob", { params: { id: op.jobId } }).catch(() => null);
      if (res && (res.ok || res.status === 409)) {
        if (!res.ok) op.cancel = "finished";
        else {
          op.cancel = res.body.outcome === "running" ? "requested" : res.body.outcome;
          op.cancelAttemptsStarted = res.body.attemptsStarted;
        }
        return;
      }
      await sleep(500);
    }
  }

  /**
   * One debounce key's creates, one at a time until the run stops: each retried with its Idempotency-Key until
   * acknowledged, then the next after a pause. One at a time, the order of the creates is the order the API
   * took them in, which is what the checker's window rules are stated over.
   */
  async function debounceLoop(d: DebounceKeyConfig) {
    for (let seqOfKey = 0; !stopped; seqOfKey++) {
      const n = ++seq;
      const key = `${keyed.name}-debounced-${n}`;
      const path = `/debounced/${d.key}/${key}`;
      const op: Op = { key, tenant: keyed.name, kind: "debounced", phase, createdAt: Date.now(), jobId: null, createRetries: 0, cancel: null };
      ops.push(op);
      outstanding++;
      try {
        for (;;) {
          const res = await keyed.client.call("createJob", { body: body("debounced", key, undefined, undefined, d), idempotencyKey: key }).catch(() => null);
          if (res?.ok) {
            const replayed = res.headers.get("idempotent-replayed") === "true";
            op.jobId = res.body.id;
            op.ackedAt = Date.now();
            op.debounce = { key: d.key, mode: d.mode, seq: seqOfKey, path, replayed, dueAt: replayed ? null : Date.parse(res.body.dueAt) };
            break;
          }
          op.createRetries++;
          if (stopped && op.createRetries > 50) break;
          const retryAfter = Number(res?.headers.get("retry-after") ?? 0);
          await sleep(retryAfter > 0 ? Math.min(retryAfter * 1_000, 2_000) : 300 + random.int(0, 400));
        }
      } finally {
        outstanding--;
      }
      // An unacknowledged create may or may not have reached its window: nothing after it can be judged in order.
      if (!op.jobId) return;
      await sleep(random.int(d.gapMs[0], d.gapMs[1]));
    }
  }

  const NORMAL_MIX: OpKind[] = ["ok", "ok", "delayed", "slow", "dep", "dep", "dlq", "fail", "cancel", "cancel"];

  async function loop() {
    while (!stopped) {
      // Bounded: during an outage, creates wait for the API instead of piling up without end.
      if (outstanding < 40) {
        void create(quiet, "quiet");
        const kind = random.pick(NORMAL_MIX);
        void create(normal, kind).then((op) => (kind === "cancel" ? cancelLater(op) : undefined));
        // Keyed work: more than a key's cap at once (each call takes 0.2-0.6 s), and more than its rate.
        void create(keyed, "capped");
        void create(keyed, "capped");
        void create(keyed, "rated");
        void create(keyed, "rated");
      }
      await sleep(200);
    }
  }

  async function createSchedule() {
    for (let tries = 0; tries < 30; tries++) {
      const res = await normal.client
        .call("createSchedule", {
          body: {
            name: "every two seconds",
            cron: "*/2 * * * * *",
            timezone: "Europe/Berlin",
            misfirePolicy: "run_latest",
            job: { target: { url: sink.url("/ok/schedule") }, dependencyKey: "sink-ok", maxAttempts: 25, backoff: { strategy: "exponential", baseMs: 200, maxMs: 2_000, jitter: "full" } },
          },
        })
        .catch(() => null);
      if (res?.ok) {
        schedules.push(res.body.id);
        return;
      }
      await sleep(500);
    }
    throw new Error("could not create the schedule");
  }

  return {
    tenants,
    ops,
    schedules,
    replays,
    setPhase(name: string) {
      phase = name;
    },
    async start() {
      await createSchedule();
      void loop();
      for (const d of KEYED_QUEUES.debounced.keys) void debounceLoop(d);
    },
    /** The noisy tenant's burst: `n` jobs in batches of 1,000 (S16). */
    async burst(n: number) {
      for (let done = 0; done < n; done += 1_000) {
        const size = Math.min(1_000, n - done);
        const batchOps: Op[] = Array.from({ length: size }, () => {
          const key = `noisy-burst-${++seq}`;
          const op: Op = { key, tenant: "noisy", kind: "burst", phase, createdAt: Date.now(), jobId: null, createRetries: 0, cancel: null };
          ops.push(op);
          return op;
        });
        for (let tries = 0; tries < 60; tries++) {
          const res = await noisy.client
            .call("createJobsBatch", { body: { jobs: batchOps.map((op) => ({ ...body("burst", op.key), idempotencyKey: op.key })) } })
            .catch(() => null);
          if (res?.ok) {
            const results = (res.body as { results: { status: number; job?: { id: string } }[] }).results;
            results.forEach((r, i) => {
              if (r.job) batchOps[i]!.jobId = r.job.id;
            });
            break;
          }
          for (const op of batchOps) op.createRetries++;
          await sleep(500);
        }
      }
    },
    /** Replays what the dependency outage dead-lettered, through the API, at a finite rate (S17). */
    async replayDeadDependencyJobs(): Promise<string | null> {
      for (let tries = 0; tries < 30; tries++) {
        const res = await normal.client.call("createDlqReplay", { body: { filter: { dependency: "sink-dep" }, ratePerSecond: 50 } }).catch(() => null);
        if (res?.ok) {
          const id = (res.body as { id: string }).id;
          replays.push(id);
          log(`replay ${id} of ${(res.body as { progress: { total: number } }).progress.total} dead jobs started`);
          return id;
        }
        if (res && res.status === 422) return null; // nothing died
        await sleep(500);
      }
      return null;
    },
    /**
     * What an operator does once the root cause is fixed: resume the replays that paused themselves
     * because their jobs failed again (a replay started right before another outage of the dependency).
     */
    async resumeAutoPausedReplays(ids: string[]): Promise<void> {
      for (const id of ids) {
        for (let tries = 0; tries < 30; tries++) {
          const res = await normal.client.call("resumeDlqReplay", { params: { id } }).catch(() => null);
          if (res?.ok) {
            log(`replay ${id} resumed (it had paused itself)`);
            break;
          }
          await sleep(500);
        }
      }
    },
    async pauseSchedules() {
      for (const id of schedules) {
        for (let tries = 0; tries < 30; tries++) {
          const res = await normal.client.call("pauseSchedule", { params: { id } }).catch(() => null);
          if (res?.ok) break;
          await sleep(500);
        }
      }
    },
    /** Stops creating; waits for creates in flight to be acknowledged. */
    async stop() {
      stopped = true;
      const deadline = Date.now() + 60_000;
      while (outstanding > 0 && Date.now() < deadline) await sleep(200);
    },
  };
}

export type Workload = Awaited<ReturnType<typeof createWorkload>>;
