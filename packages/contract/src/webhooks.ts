import { z } from "zod";
import { nullableTimestamp, timestamp } from "./common.js";

export const signingSecretSchema = z
  .object({
    secret: z.string().meta({ description: "whsec_... (Standard Webhooks); verifies webhook-signature" }),
    createdAt: timestamp,
    expiresAt: nullableTimestamp.meta({ description: "Set on old secrets during a rotation's overlap" }),
  })
  .meta({ id: "SigningSecret" });

export const signingSecretListSchema = z.object({ data: z.array(signingSecretSchema) }).meta({ id: "SigningSecretList" });

export const rotateSecretSchema = z
  .strictObject({
    overlapSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .default(86_400)
      .meta({ description: "How long the current secrets keep signing next to the new one (default 24 h)" }),
  })
  .meta({ id: "RotateSigningSecret" });
