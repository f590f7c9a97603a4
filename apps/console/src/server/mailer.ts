import nodemailer from "nodemailer";
import type { InvitationMailer } from "./services/members";

/** Invitation emails over SMTP (nodemailer), when SMTP_URL is set. The link is in the body only. */
export function createInvitationMailer(smtpUrl: string, from: string): NonNullable<InvitationMailer> {
  const url = new URL(smtpUrl);
  const transport = nodemailer.createTransport({
    host: url.hostname,
    port: Number(url.port || (url.protocol === "smtps:" ? 465 : 587)),
    secure: url.protocol === "smtps:",
    ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  return async ({ to, tenantName, role, acceptUrl, invitedBy }) => {
    await transport.sendMail({
      from,
      to,
      subject: `You are invited to ${tenantName} on Tick`,
      text:
        `${invitedBy} invited you to join ${tenantName} on Tick as ${role}.\n\n` +
        `Accept the invitation: ${acceptUrl}\n\n` +
        `The link works once and expires. If you did not expect it, ignore this email.\n`,
    });
  };
}
