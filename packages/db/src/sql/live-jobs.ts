/**
 * The live (scheduled, dispatched, running) jobs of the tenant whose id is the parameter `tenantParam`,
 * as a WHERE condition on `jobs`: led by the tenant's shard and the statuses, so it is three ranges
 * of jobs_live_idx (shard, status, tenant_id, queue_id). `jobs.shard` is the tenant's, copied at creation
 * and never changed, which is what makes the shard a safe lead.
 */
export const liveJobsOfTenant = (tenantParam: string) =>
  `shard = (SELECT shard FROM tenants WHERE id = ${tenantParam}) AND status IN ('scheduled', 'dispatched', 'running') AND tenant_id = ${tenantParam}`;
