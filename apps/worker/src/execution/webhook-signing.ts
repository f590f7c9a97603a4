import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

/**
 * Standard Webhooks signature: base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)) with the key the
 * base64-decoded part of the secret after "whsec_". With several active secrets (a rotation in
 * progress) the header carries one signature per secret, space separated, so either verifies.
 */
export function signWebhook(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`).join(" ");
}

// Decoded signing keys by secret: a tenant signs every call with the same one or two (decoding the
// base64 on every call would cost as much as the HMAC). Secrets rotate rarely; the cache is bounded all the same.
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= 10_000) keys.clear();
    key = createSecretKey(Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64"));
    keys.set(secret, key);
  }
  return key;
}

/**
 * Signs a request to a job's own target the same way, so the endpoint can check it came from Tick:
 * `Tick-Signature: v1,<base64 HMAC-SHA256(key, "<attempt id>.<timestamp>.<body>")>` (one per valid
 * secret), with `Tick-Timestamp`. Verifiable with any Standard Webhooks library by passing the attempt
 * ID as the message id.
 */
export function signTargetRequest(secrets: string[], attemptId: string, timestampSeconds: number, body: string | null): Record<string, string> {
  if (secrets.length === 0) return {};
  return { "tick-timestamp": String(timestampSeconds), "tick-signature": signWebhook(secrets, attemptId, timestampSeconds, body ?? "") };
}
