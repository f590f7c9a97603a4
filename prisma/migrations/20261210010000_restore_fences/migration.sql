-- Restore fences (`npm run tick -- restore fence`): one row per fence run on a database restored from a backup.
-- The claim reads the highest token_floor: every fencing token issued after a fence is at least its floor.
CREATE TABLE "restore_fences" (
    "id" BIGSERIAL NOT NULL,
    "fenced_at" TIMESTAMPTZ(3) NOT NULL,
    "token_floor" BIGINT NOT NULL,
    "newest_data_at" TIMESTAMPTZ(3),
    "shards" INTEGER NOT NULL,
    "attempts_in_flight" INTEGER NOT NULL,
    "overridden" TEXT[],

    CONSTRAINT "restore_fences_pkey" PRIMARY KEY ("id")
);
