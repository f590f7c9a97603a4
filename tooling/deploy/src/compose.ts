import fs from "node:fs";
import { parse } from "yaml";

/**
 * Compose's variable interpolation, as `docker compose config` does it: `${VAR}`, `${VAR:-default}` and
 * `${VAR-default}`, `${VAR:?message}` and `${VAR?message}` (an error naming VAR when unset), `$$` for a dollar.
 * Applied to every string of the parsed file.
 */
export function interpolate<T>(value: T, env: Readonly<Record<string, string>>): T {
  const one = (text: string): string =>
    text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])((?:[^}])*))?\}/g, (match, name: string | undefined, colon: string, op: string, arg: string) => {
      if (match === "$$") return "$";
      const set = env[name!] !== undefined && (colon !== ":" || env[name!] !== "");
      if (set) return env[name!]!;
      if (op === "-") return arg;
      if (op === "?") throw new Error(`${name}: ${arg || "required"}`);
      return "";
    });
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return one(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string | number | boolean | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  restart?: string;
  ports?: string[];
  /** Started only with `--profile <name>` (the sentinel profile). */
  profiles?: string[];
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
}

/** compose.yaml parsed with its anchors and merge keys resolved, then interpolated with `env`. */
export function loadCompose(file: string, env: Readonly<Record<string, string>>): ComposeFile {
  return interpolate(parse(fs.readFileSync(file, "utf8"), { merge: true }) as ComposeFile, env);
}

/** KEY=value lines of an env file (comments and blank lines skipped). */
export function readEnvFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** A service's environment as the container sees it: every value a string. */
export function environmentOf(service: ComposeService): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? "" : String(v)]));
}
