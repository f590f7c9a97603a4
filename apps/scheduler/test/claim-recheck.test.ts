// The claim against a writer that moves due jobs into the future while it runs (a trailing debounce folding a
// create into its pending job does exactly that): the claim's snapshot saw the job due, but by the time it locks
// the row the committed version is not. The lock re-reads the row; the claim must judge that version, not the one
// it scanned, or it dispatches a job early.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sql } from "@tick/db";
import { createWorld, type World } from "./harness.js";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => w?.close());

const ROUNDS = 80;
const BATCH = 400;

describe("a claim racing a writer that moves its jobs' due times", () => {
  for (const keyed of [false, true]) {
    it(`never dispatches a job whose committed due time is in the future (${keyed ? "keyed" : "unkeyed"} jobs)`, async () => {
      const t = await w.createTenant();
      const cursors: Record<string, string> = {};
      let raced = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const tag = `https://93.184.216.34/round-${round}`;
        await w.pool.query(
          `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, flow_key, updated_at)
           SELECT gen_random_uuid(), $1, $2, $3, now() - interval '1 minute', $4, CASE WHEN $5 THEN 'k' || (g % 50) END, now()
             FROM generate_series(1, $6) g`,
          [t.id, t.queueId, t.shard, tag, keyed, BATCH],
        );
        const claimer = await w.pool.connect();
        const folder = await w.pool.connect();
        try {
          await claimer.query("BEGIN");
          const claiming = sql.claimDueJobs(claimer, { shard: t.shard, epoch: "1", tenantId: t.id, limit: BATCH, keyed, keyCursors: cursors });
          // Start the move a little later each round, so that in some rounds it commits while the claim is locking.
          await new Promise((r) => setTimeout(r, round % 12));
          // The move waits for rows the claim has locked, until the claim commits.
          const moving = folder.query<{ id: string }>(
            `UPDATE jobs SET due_at = now() + interval '1 hour', version = version + 1 WHERE url = $1 AND status = 'scheduled' RETURNING id`,
            [tag],
          );
          const rows = await claiming;
          await claimer.query("COMMIT");
          const moved = await moving;
          sql.advanceKeyCursors(cursors, rows);
          // The claim answers each job's row as it updated it: a due time an hour ahead is an early dispatch.
          const early = rows.filter((r) => r.due_at.getTime() > Date.now() + 60_000);
          expect(early.map((r) => r.id)).toEqual([]);
          if (rows.length > 0 && moved.rowCount! > 0) raced++;
        } finally {
          claimer.release();
          folder.release();
        }
        await w.pool.query(`UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE url = $1 AND status = 'scheduled'`, [tag]);
      }
      // The race was run: some rounds had both the claim and the move take part of the batch.
      expect(raced).toBeGreaterThan(0);
    });
  }
});
