// The one rule for the job a template makes. A job template is what a job is asked to do: the API's create
// body, or the `job` a schedule stores for each occurrence. The job-row columns it decides are composed here:
// in TypeScript for an API create (jobColumnsFromTemplate, a row at a time) and in SQL for schedule occurrences
// (templateColumnsSql, read from each locked schedule's stored template in one bulk statement), both from the
// same TEMPLATE_FIELDS, so the two cannot compose a different row from the same template. When and for how long
// a job runs (run_at/delay_ms and expires_at for a create; the occurrence's due time and the template's
// expiresAfterMs for a schedule) and its identity (idempotency key, schedule and occurrence) are each path's own.
import { dependencyOf } from "@tick/core";

/** A job template as the API validates it and a schedule stores it; an absent (or null) field takes its fallback. */
export interface JobTemplate {
  target: {
    method?: string | null;
    url: string;
    headers?: Record<string, string> | null;
    body?: string | null;
    timeoutMs?: number | null;
  };
  priority?: number | null;
  maxAttempts?: number | null;
  backoff?: unknown;
  callbackUrl?: string | null;
  dependencyKey?: string | null;
  flowKey?: string | null;
  metadata?: Record<string, unknown> | null;
}

/** A queue's defaults, for what a template leaves out. */
export interface QueueDefaults {
  default_max_attempts: number;
  default_backoff: unknown;
  default_timeout_ms: number;
}

/** The job-row columns a template decides. */
export interface JobTemplateColumns {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
  timeout_ms: number;
  max_attempts: number;
  backoff: unknown;
  priority: number;
  callback_url: string | null;
  /** What the tenant isolates inside the queue (per-key caps, rate, fair share); null: none. */
  flow_key: string | null;
  /** The downstream system the job calls, its breaker key (dependencyOf). */
  dependency_key: string;
  /** The template's metadata; an occurrence adds its own `occurrence` to it. */
  metadata: Record<string, unknown>;
}

type Fallback = { value: string | number | Record<string, never> } | { queue: keyof QueueDefaults } | null;

/**
 * The columns read straight from one template field each: the field's path in the template, its SQL type, and
 * what an absent or null field falls back to (a constant, the queue's default as it is when the job is made, or
 * null). dependency_key and metadata are composed in TypeScript on both paths (derivedJobColumns).
 */
const TEMPLATE_FIELDS = [
  { column: "method", path: ["target", "method"], type: "text", otherwise: { value: "POST" } },
  { column: "url", path: ["target", "url"], type: "text", otherwise: null },
  { column: "headers", path: ["target", "headers"], type: "jsonb", otherwise: { value: {} } },
  { column: "body", path: ["target", "body"], type: "text", otherwise: null },
  { column: "timeout_ms", path: ["target", "timeoutMs"], type: "int", otherwise: { queue: "default_timeout_ms" } },
  { column: "max_attempts", path: ["maxAttempts"], type: "int", otherwise: { queue: "default_max_attempts" } },
  { column: "backoff", path: ["backoff"], type: "jsonb", otherwise: { queue: "default_backoff" } },
  { column: "priority", path: ["priority"], type: "int", otherwise: { value: 0 } },
  { column: "callback_url", path: ["callbackUrl"], type: "text", otherwise: null },
  { column: "flow_key", path: ["flowKey"], type: "text", otherwise: null },
] as const satisfies readonly { column: keyof JobTemplateColumns; path: readonly string[]; type: "text" | "int" | "jsonb"; otherwise: Fallback }[];

/**
 * The columns SQL cannot compose, made in TypeScript for both paths: the dependency (the template's
 * dependencyKey, else the target's host and port) and the metadata the job starts from.
 */
export function derivedJobColumns(template: JobTemplate): Pick<JobTemplateColumns, "dependency_key" | "metadata"> {
  return { dependency_key: dependencyOf(template.target.url, template.dependencyKey), metadata: template.metadata ?? {} };
}

/** The job-row columns of a template, with `queue`'s defaults where it leaves a field out (an API create). */
export function jobColumnsFromTemplate(template: JobTemplate, queue: QueueDefaults): JobTemplateColumns {
  const columns: Record<string, unknown> = derivedJobColumns(template);
  for (const f of TEMPLATE_FIELDS) {
    let value: unknown = template;
    for (const key of f.path) value = (value as Record<string, unknown> | null | undefined)?.[key];
    if (value === undefined || value === null) {
      const otherwise: Fallback = f.otherwise;
      if (otherwise === null) value = null;
      else if ("queue" in otherwise) value = queue[otherwise.queue];
      else value = typeof otherwise.value === "object" ? { ...otherwise.value } : otherwise.value;
    }
    columns[f.column] = value;
  }
  return columns as unknown as JobTemplateColumns;
}

/** A fallback constant as SQL: a quoted text, a number, or a jsonb literal. */
function sqlConstant(value: string | number | Record<string, never>, type: "text" | "int" | "jsonb"): string {
  const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
  if (typeof value === "number") return String(value);
  if (typeof value === "string" && type !== "jsonb") return quote(value);
  return `${quote(JSON.stringify(value))}::jsonb`;
}

/**
 * The same columns in SQL, for an INSERT ... SELECT that reads a stored template: `template` is its jsonb
 * expression and `queue` the alias of the job's queues row. Returns the column list and the value list in the
 * same order, without dependency_key and metadata (derivedJobColumns: the caller passes them per row).
 */
export function templateColumnsSql(template: string, queue: string): { columns: string; values: string } {
  const values = TEMPLATE_FIELDS.map((f) => {
    const parents = f.path.slice(0, -1).map((key) => `->'${key}'`).join("");
    const last = f.path[f.path.length - 1]!;
    const read =
      f.type === "jsonb"
        ? `nullif(${template}${parents}->'${last}', 'null'::jsonb)`
        : f.type === "int"
          ? `(${template}${parents}->>'${last}')::int`
          : `${template}${parents}->>'${last}'`;
    const otherwise: Fallback = f.otherwise;
    if (otherwise === null) return read;
    return `coalesce(${read}, ${"queue" in otherwise ? `${queue}.${otherwise.queue}` : sqlConstant(otherwise.value, f.type)})`;
  });
  return { columns: TEMPLATE_FIELDS.map((f) => f.column).join(", "), values: values.join(", ") };
}
