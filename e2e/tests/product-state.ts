import fs from "node:fs";
import path from "node:path";

export interface ProductState {
  consoleUrl: string;
  email: string;
  password: string;
  apiKey: string;
  health: { console: string; scheduler: string; worker: string };
  /** Each process's Prometheus endpoint: the console's on its side port (CONSOLE_METRICS_PORT), never the public one. */
  metrics: { console: string; scheduler: string; worker: string };
  /** Where the product writes the mails it sends (TICK_MAIL_DIR: `<TICK_DATA_DIR>/mail`); null when they go to SMTP_URL. */
  mailDir: string | null;
}

/** What `scripts/start.mjs` wrote once the product was ready (path given by TICK_E2E_STATE). */
export function productState(): ProductState {
  const file = process.env.TICK_E2E_STATE;
  if (!file || !fs.existsSync(file)) {
    throw new Error("TICK_E2E_STATE must name the state.json of a running product (npm test sets it up)");
  }
  return JSON.parse(fs.readFileSync(file, "utf8")) as ProductState;
}

/** One mail as the console's file transport writes it (server/mailer.ts). */
export interface Mail {
  from: string;
  to: string;
  subject: string;
  text: string;
  date: string;
}

/** The mails written to `to` so far, oldest first (poll it: mails are written just after the answer). */
export function mailsTo(state: ProductState, to: string): Mail[] {
  if (!state.mailDir) throw new Error("the product sends mail through SMTP_URL: the tests need TICK_MAIL_DIR");
  if (!fs.existsSync(state.mailDir)) return [];
  return fs
    .readdirSync(state.mailDir)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => JSON.parse(fs.readFileSync(path.join(state.mailDir!, name), "utf8")) as Mail)
    .filter((mail) => mail.to === to.toLowerCase());
}

/** The sign-up confirmation link in a mail (`…/signup/verify#token=…`). */
export function signUpLink(mail: Mail): string {
  const link = /https?:\/\/\S+\/signup\/verify#token=[\w-]+/.exec(mail.text)?.[0];
  if (!link) throw new Error(`no sign-up link in the mail "${mail.subject}"`);
  return link;
}
