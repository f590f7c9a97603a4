import type { ReactNode } from "react";

/**
 * Renders JSON Schema (draft 2020-12, as zod emits it into the OpenAPI document) as a compact property
 * tree. Inline sub-schemas are expanded (they form a finite tree); `$ref`s are only ever rendered as links
 * to the Schemas section, so self-referencing schemas cannot recurse. A depth cap guards the rest.
 */

export type JsonObject = { [key: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Array.isArray narrows to any[]; a schema's arrays hold unknown values like the rest of it. */
const isList = (value: unknown): value is unknown[] => Array.isArray(value);

const asString = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const asNumber = (value: unknown): number | undefined => (typeof value === "number" ? value : undefined);

const COMPONENT_REF = "#/components/schemas/";
const MAX_DEPTH = 6;

/** The component name of a `#/components/schemas/X` reference, else undefined. */
export function refName(schema: unknown): string | undefined {
  if (!isObject(schema) || typeof schema.$ref !== "string") return undefined;
  return schema.$ref.startsWith(COMPONENT_REF) ? schema.$ref.slice(COMPONENT_REF.length) : undefined;
}

export const schemaAnchor = (name: string) => `schema-${name}`;

export function RefLink({ name }: { name: string }) {
  return (
    <a href={`#${schemaAnchor(name)}`} title={`Schema ${name}`}
      className="font-mono text-indigo-600 underline decoration-indigo-200 underline-offset-2 hover:decoration-indigo-600">
      {name}
    </a>
  );
}

/** Text with `backtick` spans rendered as inline code (the descriptions use that much Markdown). */
export function Prose({ text }: { text: string }) {
  const parts = text.split("`");
  return (
    <>
      {parts.map((part, i) =>
        i % 2 === 1 && i < parts.length - 1
          ? <code key={i} className="rounded bg-slate-100 px-1 py-0.5 font-mono text-[0.85em] text-slate-800">{part}</code>
          : <span key={i}>{i % 2 === 1 ? `\`${part}` : part}</span>,
      )}
    </>
  );
}

const isNullSchema = (s: unknown) => isObject(s) && s.type === "null";

/** A schema without any keyword but annotations accepts any value. */
function isAnySchema(s: JsonObject): boolean {
  return Object.keys(s).every((k) => k === "description" || k === "default" || k === "title");
}

/**
 * `anyOf: [X, {type: null}]` and `type: [T, "null"]` become X/T plus a nullable flag, so the table can
 * show "string · date-time | null" instead of a union of two schemas. Annotations of the wrapper win.
 */
function unwrapNullable(schema: JsonObject): { core: JsonObject; nullable: boolean } {
  const variants = schema.anyOf ?? schema.oneOf;
  if (isList(variants)) {
    const nonNull = variants.filter((v) => !isNullSchema(v));
    const only = nonNull[0];
    if (nonNull.length === 1 && variants.length > 1 && isObject(only)) {
      const { anyOf: _anyOf, oneOf: _oneOf, ...outer } = schema;
      return { core: { ...only, ...outer }, nullable: true };
    }
    return { core: schema, nullable: false };
  }
  if (isList(schema.type) && schema.type.includes("null")) {
    const rest = schema.type.filter((t) => t !== "null");
    if (rest.length === 1) return { core: { ...schema, type: rest[0] }, nullable: true };
  }
  return { core: schema, nullable: false };
}

/** A short type expression: `string`, `array<Job>`, `map<string, string>`, `Backoff | null`. */
function TypeLabel({ schema, depth = 0 }: { schema: unknown; depth?: number }): ReactNode {
  if (!isObject(schema)) return <span>any</span>;
  if (depth > MAX_DEPTH) return <span>…</span>;
  const ref = refName(schema);
  if (ref) return <RefLink name={ref} />;
  if (typeof schema.$ref === "string") return <code>{schema.$ref}</code>;

  const union = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  if (isList(union)) {
    const sep = schema.allOf ? " & " : " | ";
    return (
      <span>
        {union.map((variant, i) => (
          <span key={i}>{i > 0 ? sep : ""}<TypeLabel schema={variant} depth={depth + 1} /></span>
        ))}
      </span>
    );
  }
  const type = schema.type;
  if (isList(type)) return <span>{type.filter((t) => typeof t === "string").join(" | ")}</span>;
  if (type === "array" || "items" in schema) {
    return <span>array&lt;<TypeLabel schema={schema.items} depth={depth + 1} />&gt;</span>;
  }
  if (type === "object" || isObject(schema.properties) || "additionalProperties" in schema) {
    if (!isObject(schema.properties) && isObject(schema.additionalProperties)) {
      return <span>map&lt;string, <TypeLabel schema={schema.additionalProperties} depth={depth + 1} />&gt;</span>;
    }
    return <span>object</span>;
  }
  if (typeof type === "string") return <span>{type}</span>;
  if ("const" in schema) return <code>{JSON.stringify(schema.const)}</code>;
  if (isList(schema.enum)) return <span>enum</span>;
  return <span>any</span>;
}

function Chip({ children }: { children: ReactNode }) {
  return <span className="rounded bg-slate-100 px-1.5 py-0.5 text-xs text-slate-600">{children}</span>;
}

function Literal({ value }: { value: unknown }) {
  return <code className="rounded bg-indigo-50 px-1 py-0.5 font-mono text-xs text-indigo-800">{JSON.stringify(value)}</code>;
}

/** zod gives every integer the safe-integer range; that bound says nothing, so it is not shown. */
const meaningfulBound = (n: number | undefined) => (n !== undefined && Math.abs(n) < Number.MAX_SAFE_INTEGER ? n : undefined);

function range(min: number | undefined, max: number | undefined, unit: string): string | undefined {
  if (min !== undefined && max !== undefined) return min === max ? `exactly ${min} ${unit}` : `${min}–${max} ${unit}`;
  if (min !== undefined) return `≥ ${min} ${unit}`;
  if (max !== undefined) return `≤ ${max} ${unit}`;
  return undefined;
}

/** Format, enum values, bounds, pattern and default of one schema, as small chips. */
function constraintChips(schema: JsonObject, prefix = ""): ReactNode[] {
  const chips: ReactNode[] = [];
  const add = (key: string, node: ReactNode) => chips.push(<Chip key={prefix + key}>{prefix}{node}</Chip>);
  const format = asString(schema.format);
  if (format) add("format", <>format <span className="font-mono">{format}</span></>);
  if (isList(schema.enum)) {
    chips.push(
      <span key={`${prefix}enum`} className="inline-flex flex-wrap items-center gap-1 text-xs text-slate-500">
        {prefix}one of {schema.enum.map((v, i) => <Literal key={i} value={v} />)}
      </span>,
    );
  }
  if ("const" in schema) add("const", <>always <Literal value={schema.const} /></>);

  const min = meaningfulBound(asNumber(schema.minimum));
  const max = meaningfulBound(asNumber(schema.maximum));
  const exMin = meaningfulBound(asNumber(schema.exclusiveMinimum));
  const exMax = meaningfulBound(asNumber(schema.exclusiveMaximum));
  if (min !== undefined) add("min", `≥ ${min}`);
  if (exMin !== undefined) add("exmin", `> ${exMin}`);
  if (max !== undefined) add("max", `≤ ${max}`);
  if (exMax !== undefined) add("exmax", `< ${exMax}`);

  const length = range(asNumber(schema.minLength), asNumber(schema.maxLength), "chars");
  if (length) add("length", length);
  const items = range(asNumber(schema.minItems), asNumber(schema.maxItems), "items");
  if (items) add("items", items);
  // Formats come with zod's long validation regex; the format name says it better.
  const pattern = asString(schema.pattern);
  if (pattern && !format) add("pattern", <>pattern <code className="break-all font-mono">{pattern}</code></>);
  if ("default" in schema) add("default", <>default <Literal value={schema.default} /></>);

  if (isObject(schema.propertyNames)) chips.push(...constraintChips(schema.propertyNames, "keys: "));
  if (isObject(schema.items) && !refName(schema.items) && !isObject(schema.items.properties)) {
    chips.push(...constraintChips(schema.items, "each: "));
  }
  if (isObject(schema.additionalProperties) && !refName(schema.additionalProperties) && !isObject(schema.properties)) {
    chips.push(...constraintChips(schema.additionalProperties, "values: "));
  }
  return chips;
}

function Constraints({ schema }: { schema: unknown }) {
  if (!isObject(schema)) return null;
  const chips = constraintChips(schema);
  return chips.length ? <span className="flex flex-wrap items-center gap-1">{chips}</span> : null;
}

/** Type, nullability and constraints of one (possibly nullable) schema, on one line. */
export function SchemaSummary({ schema }: { schema: unknown }) {
  if (!isObject(schema)) return <span className="font-mono text-xs text-slate-700">any</span>;
  const { core, nullable } = unwrapNullable(schema);
  return (
    <span className="flex flex-wrap items-center gap-x-2 gap-y-1">
      <span className="font-mono text-xs text-slate-700">
        <TypeLabel schema={core} />
        {nullable && !isAnySchema(core) ? " | null" : ""}
      </span>
      <Constraints schema={core} />
    </span>
  );
}

/** The inline object schema whose properties should be listed beneath a field, if any. */
function nestedObject(core: JsonObject): { label?: string; schema: JsonObject } | undefined {
  if (isObject(core.properties)) return { schema: core };
  if (isObject(core.items) && isObject(core.items.properties)) return { label: "each item", schema: core.items };
  if (isObject(core.additionalProperties) && isObject(core.additionalProperties.properties)) {
    return { label: "each value", schema: core.additionalProperties };
  }
  return undefined;
}

const allowsExtraProperties = (s: JsonObject) =>
  s.additionalProperties === true || (isObject(s.additionalProperties) && isAnySchema(s.additionalProperties));

function PropertyList({ schema, depth }: { schema: JsonObject; depth: number }) {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(isList(schema.required) ? schema.required.filter((r) => typeof r === "string") : []);
  const entries = Object.entries(properties);
  return (
    <ul className="divide-y divide-slate-100 text-sm">
      {entries.map(([name, prop]) => (
        <PropertyRow key={name} name={name} schema={prop} required={required.has(name)} depth={depth} />
      ))}
      {entries.length === 0 ? <li className="py-2 text-xs text-slate-500">No fixed properties.</li> : null}
      {allowsExtraProperties(schema) ? (
        <li className="py-2 text-xs italic text-slate-500">Other properties are allowed.</li>
      ) : null}
    </ul>
  );
}

function PropertyRow({ name, schema, required, depth }: { name: string; schema: unknown; required: boolean; depth: number }) {
  const core = isObject(schema) ? unwrapNullable(schema).core : {};
  const description = asString(core.description);
  const nested = refName(core) ? undefined : nestedObject(core);
  return (
    <li className="py-2" data-property={name}>
      <div className="flex flex-col gap-1 sm:flex-row sm:gap-4">
        <div className="shrink-0 sm:w-44">
          <span className="break-all font-mono text-sm font-medium text-slate-900">{name}</span>
          {required ? <span className="ml-1.5 text-xs font-medium text-rose-600">required</span> : null}
        </div>
        <div className="min-w-0 flex-1 space-y-1">
          <SchemaSummary schema={schema} />
          {description ? <p className="text-slate-600"><Prose text={description} /></p> : null}
        </div>
      </div>
      {nested ? (
        depth < MAX_DEPTH ? (
          <div className="mt-2 border-l-2 border-slate-100 pl-4 sm:ml-4">
            {nested.label ? <p className="text-xs uppercase tracking-wide text-slate-600">{nested.label}</p> : null}
            <PropertyList schema={nested.schema} depth={depth + 1} />
          </div>
        ) : (
          <p className="mt-1 text-xs text-slate-600">(nested too deep to show)</p>
        )
      ) : null}
    </li>
  );
}

/** A whole schema: a property tree for objects, else a one-line summary. References stay links. */
export function SchemaView({ schema, depth = 0 }: { schema: unknown; depth?: number }) {
  if (!isObject(schema)) return <p className="text-sm text-slate-500">Any JSON value.</p>;
  const ref = refName(schema);
  if (ref) return <p className="text-sm">See <RefLink name={ref} />.</p>;
  const { core } = unwrapNullable(schema);
  const nested = nestedObject(core);
  if (nested) {
    return (
      <div>
        {nested.label ? <p className="mb-1 text-xs text-slate-500">{nested.label === "each item" ? "An array; each item:" : "A map; each value:"}</p> : null}
        <PropertyList schema={nested.schema} depth={depth} />
      </div>
    );
  }
  const description = asString(core.description);
  return (
    <div className="space-y-1 text-sm">
      <SchemaSummary schema={schema} />
      {description ? <p className="text-slate-600"><Prose text={description} /></p> : null}
    </div>
  );
}
