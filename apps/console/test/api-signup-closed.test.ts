import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { freePort, startProcess } from "@tick/testing";
import { useConsole } from "./harness";

// TICK_SIGNUP unset: a deployment never opens sign-up by accident.
const suite = useConsole({ TICK_SIGNUP: "" });

describe("sign-up on a deployment that did not open it", () => {
  it("answers 403 signup_closed, to sign-up and to a confirmation, and creates nothing; the page says so", async () => {
    const users = await suite.h.prisma.user.count();
    const res = await suite.h.client("").call("signUp", { body: { tenantName: "Nope", email: "nope@example.test", password: "long enough password" } });
    expect(res.status).toBe(403);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe("https://tick.dev/problems/signup-closed");
    const confirmation = await suite.h.client("").call("verifySignup", { body: { token: "x".repeat(43) } });
    expect(confirmation.status).toBe(403);
    expect(await suite.h.prisma.user.count()).toBe(users);
    expect(await suite.h.prisma.tenant.count({ where: { slug: "nope" } })).toBe(0);
    expect(await suite.h.prisma.signupRequest.count()).toBe(0);
    const page = await (await fetch(`${suite.h.baseUrl}/signup`)).text();
    expect(page).toContain("Sign-up is closed");
    expect(await (await fetch(`${suite.h.baseUrl}/login`)).text()).not.toContain("Create an account");
  });
});

describe("open sign-up needs a way to mail its links", () => {
  it("with TICK_SIGNUP=open and neither SMTP_URL nor TICK_MAIL_DIR the console refuses to start, naming both", async () => {
    const consoleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
    const port = await freePort();
    const env = { ...process.env };
    delete env.SMTP_URL;
    delete env.TICK_MAIL_DIR;
    const proc = startProcess(process.execPath, [path.resolve(consoleDir, "../../node_modules/next/dist/bin/next"), "start", consoleDir, "-p", String(port), "-H", "127.0.0.1"], {
      env: {
        ...env,
        NODE_ENV: "production",
        NEXT_TELEMETRY_DISABLED: "1",
        DATABASE_URL: "postgresql://postgres@127.0.0.1:1/none",
        REDIS_URL: "redis://127.0.0.1:1",
        NEXTAUTH_SECRET: "test-secret-test-secret-test-secret-0123",
        NEXTAUTH_URL: `http://127.0.0.1:${port}`,
        CONSOLE_METRICS_PORT: String(await freePort()),
        TICK_SIGNUP: "open",
      },
    });
    try {
      // A deadline, not a sleep: it exits as soon as its configuration is read.
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([proc.exited, new Promise<"running">((resolve) => (timer = setTimeout(() => resolve("running"), 30_000)))]);
      clearTimeout(timer);
      expect(code).not.toBe("running");
      expect(code).not.toBe(0);
      expect(proc.output()).toMatch(/TICK_SIGNUP: is open, .*SMTP_URL.*TICK_MAIL_DIR/);
    } finally {
      await proc.stop();
    }
  });
});
