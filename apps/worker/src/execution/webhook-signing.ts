import { createHmac } from "node:crypto";

/**
 * Standard Webhooks signature: base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)) with the key the
 * base64-decoded part of the secret after "whsec_". With several active secrets (a rotation in
 * progress) the header carries one signature per secret, space separated, so either verifies.
 */
export function signWebhook(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
      return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
    })
    .join(" ");
}
