import { AppError } from "@tick/core";
import type { FlowKeyView, Waiting, listFlowKeysQuerySchema, putFlowKeySchema } from "@tick/contract";
import { inTransaction, sql } from "@tick/db";
import type { z } from "zod";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { writeAudit } from "./audit";
import type { TenantServiceDeps } from "./tenant-service-deps";
import { decideWaiting } from "./waiting";

type Deps = Pick<TenantServiceDeps, "pool">;

async function queueIdOf(deps: Deps, tenantId: string, name: string): Promise<string> {
  const [queue] = await sql.findQueuesByName(deps.pool, tenantId, [name]);
  if (!queue) throw new AppError("not_found", `No queue named "${name}".`);
  return queue.id;
}

function flowKeyView(queue: string, r: sql.FlowKeyRow): FlowKeyView {
  const rate = (limit: number | null, periodMs: number | null) => (limit !== null && periodMs !== null ? { limit, periodMs } : null);
  return {
    key: r.key,
    queue,
    due: r.due,
    scheduled: r.scheduled,
    inFlight: r.in_flight,
    oldestDueAgeMs: r.oldest_due_age_ms,
    paused: r.paused,
    concurrency: r.concurrency,
    rate: rate(r.rate_limit, r.rate_period_ms),
    weight: r.weight,
    override: r.overridden_at
      ? {
          concurrency: r.override_concurrency,
          rate: rate(r.override_rate_limit, r.override_rate_period_ms),
          weight: r.override_weight,
          paused: r.paused,
          setAt: r.overridden_at.toISOString(),
        }
      : null,
  };
}

/** The queue's top keys and totals (GET /queues/{name}/keys). */
export async function listFlowKeys(deps: Deps, tenantId: string, queue: string, query: z.output<typeof listFlowKeysQuerySchema>) {
  const queueId = await queueIdOf(deps, tenantId, queue);
  const { keys, totals } = await sql.listFlowKeys(deps.pool, tenantId, queueId, query);
  return {
    data: keys.map((k) => flowKeyView(queue, k)),
    totals: { keysWithWork: totals.keys_with_work, keysAtCap: totals.keys_at_cap, keysPaused: totals.keys_paused },
  };
}

export async function getFlowKey(deps: Deps, tenantId: string, queue: string, key: string): Promise<FlowKeyView> {
  const queueId = await queueIdOf(deps, tenantId, queue);
  return flowKeyView(queue, await sql.findFlowKey(deps.pool, tenantId, queueId, key));
}

/** Sets a key's override or pause (PUT), audited when it changed anything. */
export async function putFlowKey(deps: Deps, principal: ApiPrincipal, queue: string, key: string, change: z.output<typeof putFlowKeySchema>): Promise<FlowKeyView> {
  const tenantId = principal.tenant.id;
  const queueId = await queueIdOf(deps, tenantId, queue);
  await inTransaction(deps.pool, async (client) => {
    if (await sql.setFlowKeyOverride(client, tenantId, queueId, key, change)) {
      const action = change.paused === true ? "flow_key.paused" : change.paused === false ? "flow_key.resumed" : "flow_key.overridden";
      await writeAudit(client, { ...auditActor(principal), action, targetType: "flow_key", targetId: `${queue}/${key}`, details: { queue, key, change } });
    }
  });
  return getFlowKey(deps, tenantId, queue, key);
}

/** Returns a key to the queue's limits and resumes it (DELETE), audited when it had an override. */
export async function deleteFlowKey(deps: Deps, principal: ApiPrincipal, queue: string, key: string): Promise<FlowKeyView> {
  const tenantId = principal.tenant.id;
  const queueId = await queueIdOf(deps, tenantId, queue);
  await inTransaction(deps.pool, async (client) => {
    if (await sql.clearFlowKeyOverride(client, tenantId, queueId, key)) {
      await writeAudit(client, { ...auditActor(principal), action: "flow_key.reset", targetType: "flow_key", targetId: `${queue}/${key}`, details: { queue, key } });
    }
  });
  return getFlowKey(deps, tenantId, queue, key);
}

/** Why a job is not running (null when it runs or has ended); jobs in history have ended. */
export async function waitingReason(deps: Pick<TenantServiceDeps, "pool" | "readBreakers">, tenantId: string, jobId: string): Promise<Waiting | null> {
  const facts = await sql.waitingFacts(deps.pool, tenantId, jobId);
  if (!facts) return null;
  const breaker = facts.dependency_key && facts.status === "scheduled" ? ((await deps.readBreakers(tenantId, [facts.dependency_key]))?.get(facts.dependency_key) ?? null) : null;
  return decideWaiting(facts, breaker ? { state: breaker.state, openUntil: breaker.openUntil } : null);
}
