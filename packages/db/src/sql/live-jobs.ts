import type { JobState } from "@tick/core";
import { stateLiteral } from "./job-status-writes.js";

/**
 * The live (scheduled, dispatched, running) jobs of the tenant whose id is the parameter `tenantParam`,
 * as a WHERE condition on `jobs`: led by the tenant's shard and the statuses, so it is one range of
 * jobs_live_idx (shard, status, tenant_id, queue_id) per status. `jobs.shard` is the tenant's, copied at
 * creation and never changed, which is what makes the shard a safe lead. `statuses` narrows it to some of
 * the live statuses (the jobs in flight: dispatched, running).
 */
export const liveJobsOfTenant = (tenantParam: string, statuses: readonly Extract<JobState, "scheduled" | "dispatched" | "running">[] = ["scheduled", "dispatched", "running"]) =>
  `shard = (SELECT shard FROM tenants WHERE id = ${tenantParam}) AND status IN (${statuses.map(stateLiteral).join(", ")}) AND tenant_id = ${tenantParam}`;
