import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

const suite = useConsole();

describe("webhook signing secrets", () => {
  it("mints a secret on first read, rotates with an overlap, and needs webhooks:write", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const first = await client.call("listSigningSecrets", {});
    if (!first.ok) throw new Error("expected success");
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0]!.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    const again = await client.call("listSigningSecrets", {});
    if (!again.ok) throw new Error("expected success");
    expect(again.body.data.map((s) => s.secret)).toEqual(first.body.data.map((s) => s.secret));

    const rotated = await client.call("rotateSigningSecret", { body: { overlapSeconds: 3600 } });
    if (!rotated.ok) throw new Error("expected success");
    expect(rotated.body.data).toHaveLength(2);
    expect(rotated.body.data[1]!.secret).toBe(first.body.data[0]!.secret);
    expect(rotated.body.data[1]!.expiresAt).not.toBeNull();
    expect(rotated.body.data[0]!.expiresAt).toBeNull();
    expect(await suite.h.prisma.auditLog.count({ where: { tenantId: suite.a.id, action: "webhook_secret.rotated" } })).toBe(1);

    const ended = await client.call("rotateSigningSecret", { body: { overlapSeconds: 0 } });
    if (!ended.ok) throw new Error("expected success");
    expect(ended.body.data).toHaveLength(1);

    const { apiKey } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    expect((await suite.h.client(apiKey).call("listSigningSecrets", {})).status).toBe(403);
  });
});

itConformsToOpenApi(suite);
