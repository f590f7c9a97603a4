import { describe, expect, it } from "vitest";
import { useConsole } from "./harness";

// TICK_SIGNUP unset: a deployment never opens sign-up by accident.
const suite = useConsole({ TICK_SIGNUP: "" });

describe("sign-up on a deployment that did not open it", () => {
  it("answers 403 signup_closed and creates nothing; the page says so", async () => {
    const users = await suite.h.prisma.user.count();
    const res = await suite.h.client("").call("signUp", { body: { tenantName: "Nope", email: "nope@example.test", password: "long enough password" } });
    expect(res.status).toBe(403);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe("https://tick.dev/problems/signup-closed");
    expect(await suite.h.prisma.user.count()).toBe(users);
    expect(await suite.h.prisma.tenant.count({ where: { slug: "nope" } })).toBe(0);
    const page = await (await fetch(`${suite.h.baseUrl}/signup`)).text();
    expect(page).toContain("Sign-up is closed");
    expect(await (await fetch(`${suite.h.baseUrl}/login`)).text()).not.toContain("Create an account");
  });
});
