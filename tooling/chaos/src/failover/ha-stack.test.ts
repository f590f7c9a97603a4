import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HA_TEMPLATE_DIR, renderTemplate } from "./ha-stack.js";

describe("renderTemplate", () => {
  it("replaces every name and refuses a missing or an unused value", () => {
    expect(renderTemplate("a {{x}} b {{y}}", { x: 1, y: true })).toBe("a 1 b true");
    expect(() => renderTemplate("{{x}} {{y}}", { x: 1 })).toThrow("no value for {{y}}");
    expect(() => renderTemplate("{{x}}", { x: 1, z: 2 })).toThrow("values never used: z");
  });

  it("the infra/ha templates name exactly the values the stack renders them with", () => {
    const patroni = fs.readFileSync(path.join(HA_TEMPLATE_DIR, "patroni.yml"), "utf8");
    const haproxy = fs.readFileSync(path.join(HA_TEMPLATE_DIR, "haproxy.cfg"), "utf8");
    const names = (text: string) => [...new Set([...text.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]))].sort();
    // ha-stack.ts's startMember and startHaproxy pass these (renderTemplate fails on any difference at run time too).
    expect(names(patroni)).toEqual(
      ["binDir", "dataDir", "etcdHosts", "host", "hostAuth", "loopWait", "name", "pgPort", "pgpass", "replicationPassword", "replicationUser", "restPort", "retryTimeout", "scope", "socketDir", "superuserPassword", "synchronousMode", "ttl"].sort(),
    );
    expect(names(haproxy)).toEqual(["checkInterval", "fall", "host", "port", "rise", "servers"].sort());
    expect(haproxy).toMatch(/option httpchk OPTIONS \/primary/);
    expect(haproxy).toMatch(/on-marked-down shutdown-sessions/);
  });
});
