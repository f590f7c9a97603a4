import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import nodemailer from "nodemailer";
import type { InvitationMailer } from "./services/members";

/** One plain-text email. Links go in the body only. */
interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** The console's one way out for email: invitations and sign-up confirmations use the same transport. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** Where mails go, for logs and the start-up summary: "smtp://host:port" or the directory. */
  readonly destination: string;
}

export interface MailerOptions {
  /** smtp://user:pass@host:587 or smtps://… (SMTP_URL). */
  smtpUrl?: string;
  /** A directory each mail is written to as one JSON file instead of being sent (TICK_MAIL_DIR). */
  mailDir?: string;
  /** The sender (SMTP_FROM). */
  from: string;
}

/**
 * The transport the deployment configured: TICK_MAIL_DIR (files, for local runs and tests; it wins when both
 * are set), else SMTP_URL (nodemailer), else null: no mail is sent.
 */
export function createMailer(options: MailerOptions): Mailer | null {
  if (options.mailDir) return createFileMailer(path.resolve(options.mailDir), options.from);
  if (options.smtpUrl) return createSmtpMailer(options.smtpUrl, options.from);
  return null;
}

function createSmtpMailer(smtpUrl: string, from: string): Mailer {
  const url = new URL(smtpUrl);
  const port = Number(url.port || (url.protocol === "smtps:" ? 465 : 587));
  const transport = nodemailer.createTransport({
    host: url.hostname,
    port,
    secure: url.protocol === "smtps:",
    ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  return {
    destination: `${url.protocol}//${url.hostname}:${port}`,
    async send(message) {
      await transport.sendMail({ from, ...message });
    },
  };
}

/**
 * Each mail as `<time>-<random>.json` ({ from, to, subject, text, date }) in `dir`, created when missing.
 * Written under a temporary name and renamed, so a reader never sees half a mail.
 */
function createFileMailer(dir: string, from: string): Mailer {
  return {
    destination: dir,
    async send(message) {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      const date = new Date();
      const name = `${date.toISOString().replace(/[:.]/g, "-")}-${randomBytes(4).toString("hex")}`;
      const body = JSON.stringify({ from, to: message.to, subject: message.subject, text: message.text, date: date.toISOString() }, null, 2);
      const partial = path.join(dir, `.${name}.tmp`);
      await fs.writeFile(partial, body + "\n", { mode: 0o600 });
      await fs.rename(partial, path.join(dir, `${name}.json`));
    },
  };
}

/** Invitation emails (services/members.ts) through the shared transport. */
export function createInvitationMailer(mailer: Mailer): NonNullable<InvitationMailer> {
  return async ({ to, tenantName, role, acceptUrl, invitedBy }) => {
    await mailer.send({
      to,
      subject: `You are invited to ${tenantName} on Tick`,
      text:
        `${invitedBy} invited you to join ${tenantName} on Tick as ${role}.\n\n` +
        `Accept the invitation: ${acceptUrl}\n\n` +
        `The link works once and expires. If you did not expect it, ignore this email.\n`,
    });
  };
}
