-- CreateTable
CREATE TABLE "signing_secrets" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "secret" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),

    CONSTRAINT "signing_secrets_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "signing_secrets_tenant_id_idx" ON "signing_secrets"("tenant_id");

-- AddForeignKey
ALTER TABLE "signing_secrets" ADD CONSTRAINT "signing_secrets_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
