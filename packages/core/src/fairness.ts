/**
 * Weighted deficit round robin over tenants with due work (S16). Each round every eligible tenant earns
 * `quantum * weight` credits and may spend them on dispatch slots, so a quiet tenant gets its slots in
 * the first round of every allocation however large a noisy tenant's backlog is, and saturated
 * tenants share capacity in proportion to their weights. Unspent fractional credit carries over
 * between allocations (capped at one round's worth, so an idle tenant cannot bank a burst).
 */
export interface FairShareCandidate {
  tenantId: string;
  weight: number;
  /** Slots this tenant may still take (its in-flight cap minus what is in flight), or Infinity. */
  room: number;
}

export class DeficitRoundRobin {
  private readonly deficits = new Map<string, number>();
  private cursor = 0;

  constructor(private readonly quantum = 1) {}

  /** Splits `budget` slots; returns slots per tenant (tenants that get none are absent). */
  allocate(candidates: readonly FairShareCandidate[], budget: number): Map<string, number> {
    const allocation = new Map<string, number>();
    const eligible = candidates.filter((c) => c.room > 0 && c.weight > 0);
    // Forget tenants that have no due work any more: credit is for waiting work only.
    const present = new Set(eligible.map((c) => c.tenantId));
    for (const id of this.deficits.keys()) if (!present.has(id)) this.deficits.delete(id);
    if (eligible.length === 0 || budget <= 0) return allocation;

    // Rotate the starting tenant between allocations so ties do not always favour the same one.
    const start = this.cursor++ % eligible.length;
    const order = [...eligible.slice(start), ...eligible.slice(0, start)];
    let remaining = Math.floor(budget);
    let progress = true;
    while (remaining > 0 && progress) {
      progress = false;
      for (const c of order) {
        if (remaining === 0) break;
        const have = allocation.get(c.tenantId) ?? 0;
        const credit = (this.deficits.get(c.tenantId) ?? 0) + this.quantum * c.weight;
        const take = Math.min(Math.floor(credit), c.room - have, remaining);
        if (take > 0) {
          allocation.set(c.tenantId, have + take);
          remaining -= take;
          progress = true;
        }
        const left = credit - Math.max(0, take);
        this.deficits.set(c.tenantId, c.room - have - Math.max(0, take) > 0 ? Math.min(left, this.quantum * c.weight) : 0);
      }
    }
    return allocation;
  }
}
