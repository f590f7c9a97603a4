/**
 * The downstream dependency a job calls, for circuit breaking and retry budgets (S11): its explicit
 * key when the tenant gave one, else the target's host and port. Stored on the job at creation so the
 * scheduler can hold an open dependency's jobs in SQL.
 *
 * "Dependency" means only this in Tick: the system a job calls. Jobs that wait for other jobs (job
 * ordering, planned) are "prerequisites" (a job's `after`), never dependencies (docs/architecture.md, "Names").
 */
export function dependencyOf(url: string, explicitKey: string | null | undefined): string {
  if (explicitKey) return explicitKey;
  const u = new URL(url);
  return u.port ? `${u.hostname}:${u.port}` : u.hostname;
}
