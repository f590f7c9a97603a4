import { execFileSync } from "node:child_process";
import { parseAllDocuments } from "yaml";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { Job } from "kubernetes-models/batch/v1/Job";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Cluster } from "@kubernetes-models/cloudnative-pg/postgresql.cnpg.io/v1/Cluster";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each model class takes its own kind's shape
type Model = new (data: any) => { validate(): void };

/** The schema of every kind the manifests may hold (a kind not here fails the check: nothing goes unvalidated). */
const MODELS: Record<string, Model> = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "batch/v1/Job": Job,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "postgresql.cnpg.io/v1/Cluster": Cluster,
  "keda.sh/v1alpha1/ScaledObject": ScaledObject,
};

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}

interface Probe {
  httpGet: { path: string; port: string | number };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
}

/** The fields of the kinds here that the checks read (each kind's full schema is checked by validate()). */
interface Spec {
  replicas?: number;
  template?: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: { containers: Container[] } };
  /** A Service's selector is a label map; a workload's or a budget's has matchLabels. */
  selector?: Record<string, string> & { matchLabels?: Record<string, string> };
  instances?: number;
  postgresql?: { synchronous?: Record<string, unknown> };
  scaleTargetRef?: { name: string };
  minReplicaCount?: number;
  triggers?: { type: string; metadata: { query: string } }[];
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Spec;
  data?: Record<string, string>;
}

/** `kubectl kustomize <dir>`: the overlay rendered, one object per YAML document. */
export function render(dir: string): K8sObject[] {
  let out: string;
  try {
    out = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    throw new Error(e.code === "ENOENT" ? "kubectl is not installed (.ci/run installs it: apt-get install kubectl)" : `kubectl kustomize ${dir} failed: ${e.stderr ?? e.message}`);
  }
  return parseAllDocuments(out).map((d) => d.toJSON() as K8sObject).filter(Boolean);
}

/** Validates an object against its kind's schema; the error names the object and the failing field. */
export function validate(obj: K8sObject): void {
  const model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (!model) throw new Error(`${obj.apiVersion} ${obj.kind} ${obj.metadata?.name}: no schema to check it against`);
  try {
    new model(obj).validate();
  } catch (err) {
    throw new Error(`${obj.kind} ${obj.metadata.name}: ${(err as Error).message}`);
  }
}
