import type pg from "pg";
import type { BreakerKey } from "@tick/breaker";
import type { NodeStatus, PlatformStatus, Readiness, ShardStatus } from "@tick/contract";
import { sql } from "@tick/db";

/** What the operator status page's service needs (server/api/deps.ts: getPlatformStatusDeps). */
export interface PlatformStatusDeps {
  pool: pg.Pool;
  shardCount: number;
  /** Every tenant's open breakers (@tick/breaker openDependencies); null when Redis did not answer in time. */
  openBreakers: () => Promise<BreakerKey[] | null>;
  /** How long one process's /readyz may take before it counts as unreachable. */
  readyzTimeoutMs: number;
}

/** Processes whose heartbeat stopped within this long stay on the page, marked not live. */
const RECENT_MS = 10 * 60_000;
const MAX_TENANTS_LISTED = 50;
const MAX_READYZ_BYTES = 64 * 1024;

/**
 * Asks one process for its /readyz. The URL is the one the process wrote into its own heartbeat row
 * (never anything a request carries), and only an http(s) URL whose path is /readyz is fetched, without
 * following redirects, so the console cannot be pointed anywhere else through this page.
 */
async function fetchReadiness(url: string | null, timeoutMs: number): Promise<Readiness> {
  const unknown = (status: Readiness["status"], reason: string, httpStatus: number | null = null): Readiness => ({ status, httpStatus, failed: { readyz: reason }, checks: [] });
  if (!url) return unknown("unknown", "the process registered no health address");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return unknown("unknown", "its registered health address is not a URL");
  }
  if (!["http:", "https:"].includes(parsed.protocol) || parsed.pathname !== "/readyz" || parsed.username || parsed.password) {
    return unknown("unknown", "its registered health address is not a /readyz URL");
  }
  try {
    const res = await fetch(parsed, { redirect: "manual", signal: AbortSignal.timeout(timeoutMs), headers: { accept: "application/json" } });
    const text = (await res.text()).slice(0, MAX_READYZ_BYTES);
    let body: { status?: unknown; failed?: unknown; checks?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // not JSON: judged by the status code alone
    }
    const known = ["ready", "not_ready", "starting", "shutting_down"] as const;
    const status = known.find((s) => s === body.status) ?? (res.ok ? "ready" : "not_ready");
    const failed =
      body.failed && typeof body.failed === "object"
        ? Object.fromEntries(Object.entries(body.failed as Record<string, unknown>).map(([k, v]) => [k, String(v).slice(0, 500)]))
        : {};
    const checks = Array.isArray(body.checks) ? body.checks.map(String) : [];
    return { status: res.ok && status === "ready" ? "ready" : status === "ready" ? "not_ready" : status, httpStatus: res.status, failed, checks };
  } catch (err) {
    const reason = err instanceof Error && err.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : `unreachable (${(err as Error).message})`;
    return unknown("unreachable", reason);
  }
}

/**
 * The platform's status for operators: the shard map from shard_leases, schedulers and workers from their
 * heartbeat rows (each live one's own /readyz, fetched in parallel), outbox lag by the scheduler metric's
 * query, each shard's due-index mode as its holder last reported it, and open breakers from Redis.
 */
export async function platformStatus(deps: PlatformStatusDeps): Promise<PlatformStatus> {
  const [now, leases, nodes, outbox, open] = await Promise.all([
    sql.databaseNow(deps.pool),
    sql.shardLeaseStatus(deps.pool),
    sql.listNodeStatus(deps.pool, RECENT_MS),
    sql.outboxBacklog(deps.pool),
    deps.openBreakers(),
  ]);
  const modeOf = new Map<string, Record<string, string>>(nodes.filter((n) => n.role === "scheduler").map((n) => [n.id, n.due_index ?? {}]));
  const shards: ShardStatus[] = leases.map((l) => {
    const mode = l.live && l.holder ? modeOf.get(l.holder)?.[String(l.shard)] : undefined;
    return {
      shard: l.shard,
      holder: l.holder,
      region: l.region,
      epoch: l.epoch,
      expiresAt: l.expires_at?.toISOString() ?? null,
      held: l.live,
      dueIndex: l.live ? (mode === "index" || mode === "polling" ? mode : "unknown") : null,
    };
  });
  const readiness = await Promise.all(
    nodes.map((n) => (n.live ? fetchReadiness(n.health_url, deps.readyzTimeoutMs) : Promise.resolve<Readiness>({ status: "unknown", httpStatus: null, failed: { heartbeat: "its heartbeat has expired" }, checks: [] }))),
  );
  const views: NodeStatus[] = nodes.map((n, i) => ({
    role: n.role,
    id: n.id,
    region: n.region,
    version: n.version,
    startedAt: n.started_at?.toISOString() ?? null,
    lastHeartbeatAt: n.heartbeat_at.toISOString(),
    heartbeatAgeSeconds: Math.max(0, (now.getTime() - n.heartbeat_at.getTime()) / 1000),
    live: n.live,
    shards: n.role === "scheduler" ? shards.filter((s) => s.held && s.holder === n.id).map((s) => s.shard) : [],
    readiness: readiness[i]!,
  }));
  const byDependency = new Map<string, string[]>();
  for (const k of open ?? []) byDependency.set(k.dependency, [...(byDependency.get(k.dependency) ?? []), k.tenantId]);
  return {
    checkedAt: now.toISOString(),
    shardCount: deps.shardCount,
    shards,
    nodes: views,
    outbox: { backlog: outbox.count, lagSeconds: outbox.oldestAgeMs / 1000 },
    breakers: {
      available: open !== null,
      open: [...byDependency]
        .map(([dependency, tenants]) => ({ dependency, openTenants: tenants.length, tenantIds: [...tenants].sort().slice(0, MAX_TENANTS_LISTED) }))
        .sort((a, b) => b.openTenants - a.openTenants || a.dependency.localeCompare(b.dependency)),
    },
  };
}
