import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO } from "../paths.js";
import { docker, imageLabels, run, type Log } from "./docker.js";

/** The label a stand-in carries: the digest of what it was built from (tooling/deploy/standins/README.md). */
export const STANDIN_LABEL = "dev.tick.standin";
const STANDINS = path.join(REPO, "tooling/deploy/standins");
const BASE = "tick-standin/bookworm";

/** The official images infra/docker/Dockerfile and infra/compose.yaml name, and the stand-in for each. */
export const STANDIN_IMAGES = [
  { image: "node:20.19-bookworm-slim", dir: "node" },
  { image: "postgres:15-bookworm", dir: "postgres" },
  { image: "redis:7.0-bookworm", dir: "redis" },
] as const;

function digestOf(dir: string, extra: string[]): string {
  const hash = createHash("sha256");
  for (const name of fs.readdirSync(dir).sort()) {
    hash.update(name);
    hash.update(fs.readFileSync(path.join(dir, name)));
  }
  for (const e of extra) hash.update(e);
  return hash.digest("hex").slice(0, 16);
}

/** The machine's Node.js binary, npm and CA bundle: what the node stand-in is made of. */
function nodeParts() {
  const npmDir = path.join(path.dirname(fs.realpathSync(process.execPath)), "../lib/node_modules/npm");
  const npm = fs.existsSync(npmDir) ? npmDir : "/usr/lib/node_modules/npm";
  const npmVersion = (JSON.parse(fs.readFileSync(path.join(npm, "package.json"), "utf8")) as { version: string }).version;
  const ca = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"].find((f) => fs.existsSync(f));
  if (!ca) throw new Error("no CA bundle at /etc/ssl/certs/ca-certificates.crt");
  return { node: fs.realpathSync(process.execPath), npm, npmVersion, ca };
}

/** The bookworm root file system every stand-in starts from: debootstrap (minbase), imported once. */
async function ensureBase(log: Log): Promise<void> {
  const digest = "debootstrap-minbase-bookworm-1";
  if ((await imageLabels(BASE))?.[STANDIN_LABEL] === digest) return;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tick-standin-rootfs-"));
  try {
    log("stand-ins: debootstrap --variant=minbase bookworm (about 40 s, once per machine)");
    await run("debootstrap", ["--variant=minbase", "bookworm", root, "http://deb.debian.org/debian"], { onLine: throttled(log, "debootstrap") });
    fs.rmSync(path.join(root, "var/lib/apt/lists"), { recursive: true, force: true });
    fs.mkdirSync(path.join(root, "var/lib/apt/lists/partial"), { recursive: true });
    for (const f of fs.readdirSync(path.join(root, "var/cache/apt/archives"))) if (f.endsWith(".deb")) fs.rmSync(path.join(root, "var/cache/apt/archives", f));
    await run("sh", ["-c", `tar -C '${root}' -c . | docker import --change 'LABEL ${STANDIN_LABEL}=${digest}' --change 'CMD ["bash"]' - ${BASE}`]);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  log(`stand-ins: ${BASE} imported`);
}

/** Passes every 20th line of a long command's output on, so long work shows it is moving. */
function throttled(log: Log, what: string): (line: string) => void {
  let n = 0;
  return (line) => {
    if (n++ % 20 === 0) log(`  ${what}: ${line.slice(0, 160)}`);
  };
}

export interface StandinReport {
  image: string;
  /** official: an image of that name without our label was there and is used as it is. */
  source: "official" | "cached stand-in" | "built stand-in";
  ms: number;
}

/**
 * Makes sure each official base image name resolves: an official image present is used as it is, a stand-in
 * built from the same files is reused, anything else is (re)built. Never replaces an image without the label.
 */
export async function ensureStandins(log: Log): Promise<StandinReport[]> {
  const reports: StandinReport[] = [];
  const parts = nodeParts();
  for (const { image, dir } of STANDIN_IMAGES) {
    const started = Date.now();
    const src = path.join(STANDINS, dir);
    const extra = dir === "node" ? [process.version, parts.npmVersion, fs.readFileSync(parts.ca, "utf8")] : [];
    const digest = digestOf(src, extra);
    const labels = await imageLabels(image);
    if (labels && !(STANDIN_LABEL in labels)) {
      reports.push({ image, source: "official", ms: Date.now() - started });
      continue;
    }
    if (labels?.[STANDIN_LABEL] === digest) {
      reports.push({ image, source: "cached stand-in", ms: Date.now() - started });
      continue;
    }
    await ensureBase(log);
    const context = fs.mkdtempSync(path.join(os.tmpdir(), `tick-standin-${dir}-`));
    try {
      fs.cpSync(src, context, { recursive: true });
      if (dir === "node") {
        fs.copyFileSync(parts.node, path.join(context, "node"));
        fs.chmodSync(path.join(context, "node"), 0o755);
        fs.cpSync(parts.npm, path.join(context, "npm"), { recursive: true, verbatimSymlinks: true });
        fs.copyFileSync(parts.ca, path.join(context, "ca-certificates.crt"));
      }
      log(`stand-ins: building ${image} from tooling/deploy/standins/${dir}`);
      await docker(["build", "--label", `${STANDIN_LABEL}=${digest}`, "-t", image, context], { onLine: throttled(log, image) });
    } finally {
      fs.rmSync(context, { recursive: true, force: true });
    }
    reports.push({ image, source: "built stand-in", ms: Date.now() - started });
  }
  return reports;
}
