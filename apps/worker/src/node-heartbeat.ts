import type { Queryable } from "@tick/db";
import { sql } from "@tick/db";
import type { Logger, ServiceNode } from "@tick/runtime";

export interface NodeHeartbeatOptions {
  db: Queryable;
  node: ServiceNode;
  logger: Logger;
  /** How often the row is upserted (default 10 s); it counts as live for three intervals. */
  intervalMs?: number;
}

/**
 * This worker's row in worker_nodes (version, /readyz address, last heartbeat in database time) for the
 * operator status page. Off the hot path: one upsert every interval on its own timer; a failed one is
 * logged at most once a minute and the next interval tries again. stop() removes the row (clean shutdown).
 */
export function startNodeHeartbeat(options: NodeHeartbeatOptions): { stop(): Promise<void> } {
  const { db, node, logger, intervalMs = 10_000 } = options;
  const status = { version: node.version, healthUrl: node.healthUrl, startedAt: node.startedAt };
  let lastWarning = 0;
  let beating: Promise<void> = Promise.resolve();
  const beat = () => {
    beating = sql.heartbeatWorkerNode(db, node.id, node.region, 3 * intervalMs, status).catch((err: unknown) => {
      if (Date.now() - lastWarning < 60_000) return;
      lastWarning = Date.now();
      logger.warn({ err: (err as Error).message }, "worker heartbeat failed; retrying");
    });
  };
  beat();
  const timer = setInterval(beat, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await beating;
      await sql.removeWorkerNode(db, node.id).catch((err: unknown) => logger.warn({ err: (err as Error).message }, "removing the worker heartbeat row failed"));
    },
  };
}
