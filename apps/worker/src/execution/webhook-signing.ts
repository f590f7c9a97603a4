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
