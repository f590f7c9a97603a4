-- Security: roles belong to the principal, sessions can be ended, sign-up confirms the email.
--
-- api_keys.role: the most a key may do, whatever its scopes (the role its maker held). Existing keys made by a
-- person take that person's current role in the key's tenant; any other key (made by a key, by the CLI, or by
-- someone no longer a member) becomes admin, never owner: an owner re-creates a key for owner-only actions.
ALTER TABLE "api_keys" ADD COLUMN "role" "role" NOT NULL DEFAULT 'admin';
UPDATE "api_keys" k SET "role" = m."role"
  FROM "memberships" m
  WHERE k."created_by" = 'user:' || m."user_id"::text AND m."tenant_id" = k."tenant_id";

-- CreateTable
CREATE TABLE "sessions" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "revoked_reason" TEXT,
    "user_agent" TEXT,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "signup_requests" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "password_hash" TEXT NOT NULL,
    "name" TEXT,
    "tenant_name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "completed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "signup_requests_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sessions_user_id_created_at_idx" ON "sessions"("user_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "signup_requests_token_hash_key" ON "signup_requests"("token_hash");

-- CreateIndex
CREATE INDEX "signup_requests_email_created_at_idx" ON "signup_requests"("email", "created_at");

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
