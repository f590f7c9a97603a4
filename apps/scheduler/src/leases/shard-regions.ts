/**
 * Home regions of shards (S18): `TICK_SHARD_REGIONS`, e.g. `eu:0-7,us:8-15`. A shard with a home region is
 * held by that region's schedulers while any of them is alive, and by any region's while none is (the
 * region is down: its shards fail over, fenced by their epochs). When the home region's schedulers come
 * back, the others hand its shards back. A shard without a home region goes to any scheduler.
 */
export type ShardRegions = ReadonlyMap<number, string>;

/** Parses `region:from-to,region:shard,...`; throws a message naming what is wrong. */
export function parseShardRegions(text: string, shardCount: number): Map<number, string> {
  const homes = new Map<number, string>();
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9._-]+):(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`"${part}": use region:shard or region:from-to, e.g. eu:0-7,us:8-15`);
    const [, region, from, to] = m;
    const first = Number(from);
    const last = Number(to ?? from);
    if (last < first) throw new Error(`"${part}": the range ends before it starts`);
    if (last >= shardCount) throw new Error(`"${part}": shard ${last} does not exist (TICK_SHARDS is ${shardCount}: shards 0-${shardCount - 1})`);
    for (let s = first; s <= last; s++) {
      if (homes.has(s)) throw new Error(`shard ${s} has two home regions (${homes.get(s)} and ${region})`);
      homes.set(s, region!);
    }
  }
  return homes;
}

export interface LiveScheduler {
  /** Shards it holds now. */
  held: number;
  region: string;
}

export interface ShardPlan {
  /** Shards this scheduler may hold now, its home region's first. */
  pool: number[];
  /** Its share of them: each shard counted as 1 / (live schedulers that may hold it), rounded up. */
  fairShare: number;
  /** Held shards whose home region is not this one and has live schedulers again: to be handed back. */
  handBack: number[];
  /** Whether another live scheduler holds fewer than its own share and may hold one of `candidates`. */
  starving(candidates: readonly number[]): boolean;
}

/**
 * Which shards a scheduler may hold and how many, given every live scheduler (itself included). With no
 * home regions this is the plain split: ceil(shards / live schedulers) each.
 */
export function planShards(args: { holder: string; region: string; shardCount: number; homes: ShardRegions; live: ReadonlyMap<string, LiveScheduler>; held: readonly number[] }): ShardPlan {
  const { holder, region, shardCount, homes, live, held } = args;
  const liveRegions = new Set([...live.values()].map((n) => n.region));
  const mayHold = (shard: number, r: string) => {
    const home = homes.get(shard);
    return home === undefined || home === r || !liveRegions.has(home);
  };
  const holdersOf = new Map<number, number>();
  for (let s = 0; s < shardCount; s++) holdersOf.set(s, [...live.values()].filter((n) => mayHold(s, n.region)).length);
  const shareOf = (r: string) => {
    let share = 0;
    for (let s = 0; s < shardCount; s++) if (mayHold(s, r)) share += 1 / Math.max(1, holdersOf.get(s)!);
    // A whole share rounds up; the epsilon keeps 4 × 0.25 from becoming 1.0000000002 → 2.
    return Math.ceil(share - 1e-9);
  };
  const all = Array.from({ length: shardCount }, (_, s) => s);
  const pool = [...all.filter((s) => homes.get(s) === region), ...all.filter((s) => homes.get(s) !== region && mayHold(s, region))];
  return {
    pool,
    fairShare: shareOf(region),
    handBack: held.filter((s) => !mayHold(s, region)),
    starving: (candidates) =>
      [...live.entries()].some(([id, n]) => id !== holder && n.held < shareOf(n.region) && candidates.some((s) => mayHold(s, n.region))),
  };
}
