-- AlterTable
ALTER TABLE "dlq_replays" ADD COLUMN     "attempts" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "failure_window" INTEGER NOT NULL DEFAULT 20,
ADD COLUMN     "judged_since" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "next_slot_at" TIMESTAMPTZ(3),
ADD COLUMN     "shard" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "skipped" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "dlq_replay_items" (
    "replay_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "priority" INTEGER NOT NULL,
    "dead_at" TIMESTAMPTZ(3) NOT NULL,
    "released_at" TIMESTAMPTZ(3),
    "fencing_base" BIGINT,
    "first_outcome" TEXT,
    "first_outcome_at" TIMESTAMPTZ(3),
    "first_error" TEXT,
    "outcome" TEXT,
    "settled_at" TIMESTAMPTZ(3),

    CONSTRAINT "dlq_replay_items_pkey" PRIMARY KEY ("replay_id","job_id")
);

-- CreateIndex
CREATE INDEX "dlq_replay_items_pending_idx" ON "dlq_replay_items"("replay_id", "priority" DESC, "dead_at", "job_id") WHERE (released_at IS NULL AND outcome IS NULL);

-- CreateIndex
CREATE INDEX "dlq_replay_items_in_flight_idx" ON "dlq_replay_items"("replay_id") WHERE (released_at IS NOT NULL AND outcome IS NULL);

-- CreateIndex
CREATE INDEX "dlq_replay_items_first_outcome_idx" ON "dlq_replay_items"("replay_id", "first_outcome_at" DESC) WHERE (first_outcome_at IS NOT NULL);

-- CreateIndex
CREATE INDEX "dlq_replay_items_open_job_idx" ON "dlq_replay_items"("job_id") WHERE (outcome IS NULL);

-- CreateIndex
CREATE INDEX "dlq_replays_open_idx" ON "dlq_replays"("shard") WHERE (finished_at IS NULL);

-- AddForeignKey
ALTER TABLE "dlq_replay_items" ADD CONSTRAINT "dlq_replay_items_replay_id_fkey" FOREIGN KEY ("replay_id") REFERENCES "dlq_replays"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "dlq_replay_items" ADD CONSTRAINT "dlq_replay_items_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- CreateTable
CREATE TABLE "dlq_replay_pacing" (
    "replay_id" UUID NOT NULL,
    "last_start_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "dlq_replay_pacing_pkey" PRIMARY KEY ("replay_id")
);

-- AddForeignKey
ALTER TABLE "dlq_replay_pacing" ADD CONSTRAINT "dlq_replay_pacing_replay_id_fkey" FOREIGN KEY ("replay_id") REFERENCES "dlq_replays"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A replay written before this migration has no items to release: close it.
UPDATE "dlq_replays" SET "finished_at" = COALESCE("finished_at", now());
ALTER TABLE "dlq_replays" ALTER COLUMN "shard" DROP DEFAULT;
