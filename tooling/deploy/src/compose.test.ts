import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { APP_ENTRY, appOf, envProblems, HEALTH_PORT, type AppName } from "./apps.js";
import { environmentOf, interpolate, loadCompose, readEnvFile } from "./compose.js";
import { REPO } from "./paths.js";

const composeFile = path.join(REPO, "infra/compose.yaml");
const exampleEnv = readEnvFile(path.join(REPO, "infra/compose.env.example"));
const compose = loadCompose(composeFile, exampleEnv);
const services = Object.entries(compose.services);
const apps = services.flatMap(([name, s]) => {
  const app = appOf(s.command);
  return app ? [{ name, app, service: s, env: environmentOf(s) }] : [];
});

describe("infra/compose.yaml (one host)", () => {
  it("runs Postgres, Redis, the migrations, the console, two schedulers and two workers", () => {
    expect(services.filter(([, s]) => !s.profiles).map(([name]) => name).sort()).toEqual(["console", "migrate", "postgres", "redis", "scheduler-1", "scheduler-2", "worker-1", "worker-2"]);
    const count = (app: AppName) => apps.filter((a) => a.app === app).length;
    expect([count("console"), count("scheduler"), count("worker")]).toEqual([1, 2, 2]);
  });

  it("has a sentinel profile: a replica of redis and three sentinels monitoring it as the master name the apps are given", () => {
    const profiled = services.filter(([, s]) => s.profiles?.includes("sentinel")).map(([name]) => name).sort();
    expect(profiled).toEqual(["redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"]);
    expect(compose.services["redis-replica"]!.command!.join(" ")).toContain("--replicaof redis 6379");
    const master = new Set(apps.map((a) => a.env.REDIS_SENTINEL_MASTER));
    expect([...master]).toEqual(["tick"]);
    for (const name of ["sentinel-1", "sentinel-2", "sentinel-3"]) {
      const s = compose.services[name]!;
      const script = s.command!.join(" ");
      expect(script).toContain("sentinel monitor tick redis 6379 2");
      expect(script).toContain("exec redis-server /tmp/sentinel.conf --sentinel");
      // Each announces its own name ($$ is compose's literal dollar: the shell expands it in the container).
      expect(script).toContain("sentinel announce-ip $SENTINEL_NAME");
      expect(environmentOf(s).SENTINEL_NAME).toBe(name);
    }
    // Without REDIS_SENTINELS the apps use REDIS_URL; with it (as infra/.env sets it for the profile) each app's
    // schema takes the sentinels.
    for (const a of apps) expect(a.env.REDIS_SENTINELS).toBe("");
    const withSentinels = loadCompose(composeFile, { ...exampleEnv, REDIS_SENTINELS: "sentinel-1:26379,sentinel-2:26379,sentinel-3:26379" });
    for (const [name, s] of Object.entries(withSentinels.services)) {
      const app = appOf(s.command);
      if (app) expect({ service: name, problems: envProblems(app, environmentOf(s)) }).toEqual({ service: name, problems: [] });
    }
  });

  it("gives every app an environment its own schema accepts: every required variable set, none unknown", () => {
    for (const a of apps) expect({ service: a.name, problems: envProblems(a.app, a.env) }).toEqual({ service: a.name, problems: [] });
  });

  it("the schema check would catch a misspelt or a missing variable", () => {
    const console = apps.find((a) => a.app === "console")!;
    expect(envProblems("console", { ...console.env, NEXTAUTH_SECRT: "x".repeat(40) })).toContain("NEXTAUTH_SECRT is not a console setting");
    const { NEXTAUTH_SECRET: _omitted, ...without } = console.env;
    expect(envProblems("console", without).join("\n")).toMatch(/NEXTAUTH_SECRET/);
    const worker = apps.find((a) => a.app === "worker")!;
    expect(envProblems("worker", { ...worker.env, WORKER_CONCURRENCY: "lots" }).join("\n")).toMatch(/WORKER_CONCURRENCY/);
  });

  it("refuses to start without the secrets (no default password or session key)", () => {
    const raw = fs.readFileSync(composeFile, "utf8");
    expect(raw).toMatch(/\$\{POSTGRES_PASSWORD:\?/);
    expect(raw).toMatch(/\$\{NEXTAUTH_SECRET:\?/);
    const { POSTGRES_PASSWORD: _p, ...noPassword } = exampleEnv;
    expect(() => loadCompose(composeFile, noPassword)).toThrow(/POSTGRES_PASSWORD/);
    expect(interpolate("a$${B}-${C:-d}-${E-f}", { E: "" })).toBe("a${B}-d-");
  });

  it("wires each app's health check to its own /readyz on the port it listens on", () => {
    for (const a of apps) {
      const { variable, fallback } = HEALTH_PORT[a.app];
      const port = variable ? Number(a.env[variable] ?? fallback) : fallback;
      const check = (a.service.healthcheck?.test ?? []).join(" ");
      expect(check, a.name).toContain(`http://127.0.0.1:${port}/readyz`);
    }
    // Listening on every interface inside its container, so Prometheus can scrape /metrics.
    for (const a of apps) expect(a.env.TICK_BIND_HOST, a.name).toBe("0.0.0.0");
  });

  it("starts the apps only after the migrations completed and Redis answers; the migrations after Postgres is healthy", () => {
    for (const a of apps) {
      expect(a.service.depends_on?.migrate?.condition, a.name).toBe("service_completed_successfully");
      expect(a.service.depends_on?.redis?.condition, a.name).toBe("service_healthy");
    }
    const migrate = compose.services.migrate!;
    expect(migrate.depends_on?.postgres?.condition).toBe("service_healthy");
    expect(migrate.restart).toBe("no");
    expect(migrate.command).toEqual(["npm", "run", "migrate:deploy"]);
    const rootScripts = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    expect(rootScripts["migrate:deploy"]).toBeDefined();
    for (const [name, s] of services) for (const dep of Object.keys(s.depends_on ?? {})) expect(compose.services[dep], `${name} depends on ${dep}`).toBeDefined();
  });

  it("gives schedulers and workers distinct identities, and every process the same shard count and database", () => {
    const ids = (app: AppName, variable: string) => apps.filter((a) => a.app === app).map((a) => a.env[variable]);
    expect(new Set(ids("scheduler", "SCHEDULER_ID")).size).toBe(2);
    expect(new Set(ids("worker", "WORKER_ID")).size).toBe(2);
    const shards = new Set(apps.filter((a) => a.app !== "worker").map((a) => a.env.TICK_SHARDS));
    expect(shards.size).toBe(1);
    expect(new Set(apps.map((a) => a.env.DATABASE_URL)).size).toBe(1);
    expect(new Set(apps.map((a) => a.env.REDIS_URL)).size).toBe(1);
  });

  it("runs entry points the Dockerfile's image holds: the built repository's", () => {
    const dockerfile = fs.readFileSync(path.join(REPO, "infra/docker/Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/npm ci/);
    expect(dockerfile).toMatch(/turbo run build/);
    for (const [name, s] of services) {
      if (!s.build) continue;
      expect(s.build.dockerfile, name).toBe("infra/docker/Dockerfile");
      expect(path.resolve(path.dirname(composeFile), s.build.context), name).toBe(REPO);
    }
    // The build ran before the tests (npm test builds first): the files each command starts exist.
    for (const entry of Object.values(APP_ENTRY)) expect(fs.existsSync(path.join(REPO, entry[1]!)), entry[1]).toBe(true);
    expect(fs.existsSync(path.join(REPO, "apps/console/.next/BUILD_ID"))).toBe(true);
  });

  it("copies every workspace's package.json before npm ci (else the dependency layer is incomplete)", () => {
    const dockerfile = fs.readFileSync(path.join(REPO, "infra/docker/Dockerfile"), "utf8");
    const beforeInstall = dockerfile.slice(0, dockerfile.indexOf("RUN npm ci"));
    const copied = [...beforeInstall.matchAll(/^COPY (\S+)\/package\.json /gm)].map((m) => m[1]).sort();
    const root = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { workspaces: string[] };
    const workspaces = root.workspaces
      .flatMap((w) => (w.endsWith("/*") ? fs.readdirSync(path.join(REPO, w.slice(0, -2))).map((d) => `${w.slice(0, -2)}/${d}`) : [w]))
      .filter((w) => fs.existsSync(path.join(REPO, w, "package.json")))
      .sort();
    expect(copied).toEqual(workspaces);
  });
});
