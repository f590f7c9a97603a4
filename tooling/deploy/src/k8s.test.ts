import path from "node:path";
import { describe, expect, it } from "vitest";
import { appOf, envProblems, HEALTH_PORT, METRICS_PORT } from "./apps.js";
import { render, validate, type Container, type K8sObject } from "./k8s.js";
import { REPO } from "./paths.js";
import { documentedMetrics, isExported, readPromql } from "./promql.js";

const OVERLAYS = ["production", "dev"] as const;
const rendered = Object.fromEntries(OVERLAYS.map((o) => [o, render(path.join(REPO, "infra/k8s/overlays", o))])) as Record<(typeof OVERLAYS)[number], K8sObject[]>;
const find = (objs: K8sObject[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);
const ofKind = (objs: K8sObject[], kind: string) => objs.filter((o) => o.kind === kind);

/** A workload's pod template containers (Deployments, StatefulSets, Jobs). */
const containersOf = (o: K8sObject): Container[] => o.spec?.template?.spec.containers ?? [];
const firstContainer = (o: K8sObject): Container => containersOf(o)[0]!;

/**
 * A container's environment as the pod would get it: its ConfigMaps' keys and its own variables. Values that
 * come from a Secret or the downward API stand in as a value of the right form (the check is that they are set).
 */
function containerEnv(objs: K8sObject[], c: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const name = from.configMapRef?.name ?? "";
    const cm = find(objs, "ConfigMap", name);
    if (!cm) throw new Error(`ConfigMap ${name} is missing`);
    Object.assign(env, cm.data);
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = e.name === "DATABASE_URL" ? "postgresql://tick:secret@tick-pg-rw:5432/tick" : "s".repeat(44);
    else if (e.valueFrom?.fieldRef) env[e.name] = "tick-pod-0";
    else if (e.valueFrom?.configMapKeyRef) {
      const { name, key } = e.valueFrom.configMapKeyRef;
      const value = find(objs, "ConfigMap", name)?.data?.[key];
      if (value === undefined) throw new Error(`${e.name}: ConfigMap key ${name}/${key} is missing`);
      env[e.name] = value;
    }
  }
  return env;
}

describe("infra/k8s (Kustomize base and overlays)", () => {
  it.each(OVERLAYS)("%s renders, and every object is valid against its kind's schema (Kubernetes, CloudNativePG, KEDA)", (overlay) => {
    const objs = rendered[overlay];
    expect(objs.length).toBeGreaterThan(10);
    for (const o of objs) expect(() => validate(o)).not.toThrow();
    for (const o of objs) if (o.kind !== "Namespace") expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe(overlay === "dev" ? "tick-dev" : "tick");
  });

  it("the schema check catches a wrong field and a kind it has no schema for", () => {
    const deployment = structuredClone(find(rendered.production, "Deployment", "tick-worker")!);
    (firstContainer(deployment).ports![0] as { containerPort: unknown }).containerPort = "ninety";
    expect(() => validate(deployment)).toThrow(/containerPort/);
    expect(() => validate({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } })).toThrow(/no schema/);
  });

  it.each(OVERLAYS)("%s: console, scheduler and worker Deployments, each container's environment accepted by its app's schema", (overlay) => {
    const objs = rendered[overlay];
    const deployments = ofKind(objs, "Deployment");
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(["tick-console", "tick-scheduler", "tick-worker"]);
    for (const d of deployments) {
      const c = firstContainer(d);
      const app = appOf(c.command);
      expect(app, d.metadata.name).not.toBeNull();
      expect({ deployment: d.metadata.name, problems: envProblems(app!, containerEnv(objs, c)) }).toEqual({ deployment: d.metadata.name, problems: [] });
    }
  });

  it.each(OVERLAYS)("%s: liveness on /healthz and readiness on /readyz, at the port each app serves them on", (overlay) => {
    for (const d of ofKind(rendered[overlay], "Deployment")) {
      const c = firstContainer(d);
      const app = appOf(c.command)!;
      const env = containerEnv(rendered[overlay], c);
      const { variable, fallback } = HEALTH_PORT[app];
      const port = variable ? Number(env[variable] ?? fallback) : fallback;
      const named = (p: string | number | undefined) => (typeof p === "string" ? c.ports?.find((x) => x.name === p)?.containerPort : p);
      expect([c.livenessProbe?.httpGet.path, named(c.livenessProbe?.httpGet.port)], d.metadata.name).toEqual(["/healthz", port]);
      expect([c.readinessProbe?.httpGet.path, named(c.readinessProbe?.httpGet.port)], d.metadata.name).toEqual(["/readyz", port]);
    }
  });

  it.each(OVERLAYS)("%s: every app's pods are scraped by Prometheus at the port its /metrics listens on, a named containerPort", (overlay) => {
    for (const d of ofKind(rendered[overlay], "Deployment")) {
      const c = firstContainer(d);
      const app = appOf(c.command)!;
      const { variable, fallback } = METRICS_PORT[app];
      const port = Number(containerEnv(rendered[overlay], c)[variable] ?? fallback);
      const annotations = d.spec?.template?.metadata.annotations ?? {};
      expect([annotations["prometheus.io/scrape"], annotations["prometheus.io/port"], annotations["prometheus.io/path"]], d.metadata.name).toEqual(["true", String(port), "/metrics"]);
      expect(c.ports?.some((p) => p.containerPort === port && p.name), `${d.metadata.name}: a named containerPort ${port}`).toBe(true);
    }
  });

  it("production: the console and the schedulers agree on the shard count", () => {
    const objs = rendered.production;
    const shards = ["tick-console", "tick-scheduler"].map((n) => containerEnv(objs, firstContainer(find(objs, "Deployment", n)!)).TICK_SHARDS);
    expect(shards[0]).toMatch(/^\d+$/);
    expect(shards[1]).toBe(shards[0]);
  });

  it("production: a disruption budget for each app, selecting its pods; Services select existing pods", () => {
    const objs = rendered.production;
    const labelsOf = (o: K8sObject) => o.spec?.template?.metadata.labels ?? {};
    const matches = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
      selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
    for (const name of ["tick-console", "tick-scheduler", "tick-worker"]) {
      const labels = labelsOf(find(objs, "Deployment", name)!);
      const pdbs = ofKind(objs, "PodDisruptionBudget").filter((p) => matches(p.spec?.selector?.matchLabels, labels));
      expect(pdbs.length, name).toBe(1);
    }
    const podLabels = [...ofKind(objs, "Deployment"), ...ofKind(objs, "StatefulSet")].map(labelsOf);
    for (const svc of ofKind(objs, "Service")) {
      const { matchLabels: _none, ...selector } = svc.spec?.selector ?? {};
      expect(podLabels.some((l) => matches(selector, l)), svc.metadata.name).toBe(true);
    }
  });

  it("production: Postgres through CloudNativePG with a synchronous standby; every process reads the database URL from its app secret", () => {
    const objs = rendered.production;
    const pg = find(objs, "Cluster", "tick-pg")!;
    expect(pg.spec?.instances).toBeGreaterThanOrEqual(2);
    expect(pg.spec?.postgresql?.synchronous).toMatchObject({ number: 1, dataDurability: "required" });
    const pods = [...ofKind(objs, "Deployment"), ...ofKind(objs, "Job")].flatMap(containersOf);
    expect(pods.length).toBe(4);
    for (const c of pods) {
      const db = c.env?.find((e) => e.name === "DATABASE_URL");
      expect(db?.valueFrom?.secretKeyRef, c.name).toEqual({ name: `${pg.metadata.name}-app`, key: "uri" });
    }
  });

  it("production: the migration Job runs the migrations with the apps' image, pinned to a release", () => {
    const objs = rendered.production;
    const c = firstContainer(find(objs, "Job", "tick-migrate")!);
    expect(c.command).toEqual(["npm", "run", "migrate:deploy"]);
    const images = new Set(ofKind(objs, "Deployment").map((d) => firstContainer(d).image));
    expect(images).toEqual(new Set([c.image]));
    expect(c.image).toMatch(/:\d+\.\d+\.\d+$/);
  });

  it("workers scale with KEDA on metrics the processes export: overdue jobs and scheduling lag", () => {
    const documented = documentedMetrics();
    for (const overlay of OVERLAYS) {
      const scaled = ofKind(rendered[overlay], "ScaledObject");
      expect(scaled.map((s) => s.spec?.scaleTargetRef?.name)).toEqual(["tick-worker"]);
      const queries = (scaled[0]!.spec?.triggers ?? []).map((t) => t.metadata.query);
      expect(queries.length).toBe(2);
      for (const q of queries) {
        const { errors, metrics } = readPromql(q);
        expect(errors, q).toEqual([]);
        expect(metrics.length, q).toBeGreaterThan(0);
        for (const name of metrics) expect(isExported(name, documented), `${name} (in ${q}) is exported`).toBe(true);
      }
    }
  });

  it("dev: one of each app, one Postgres instance, open sign-up on a local URL", () => {
    const objs = rendered.dev;
    for (const d of ofKind(objs, "Deployment")) expect(d.spec?.replicas, d.metadata.name).toBe(1);
    expect(find(objs, "Cluster", "tick-pg")!.spec?.instances).toBe(1);
    const consoleEnv = containerEnv(objs, firstContainer(find(objs, "Deployment", "tick-console")!));
    expect([consoleEnv.NEXTAUTH_URL, consoleEnv.TICK_SIGNUP]).toEqual(["http://127.0.0.1:3000", "open"]);
  });
});
