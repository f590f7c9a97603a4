import { AppError } from "@tick/core";

/**
 * Input hygiene for the API's one request pipeline: what no handler, service or SQL statement should ever
 * see. Postgres refuses NUL in text and jsonb, lone UTF-16 surrogates cannot be encoded as UTF-8, and
 * JSON nested thousands of levels deep overflows the stack of every recursive walk after JSON.parse
 * (zod, canonical JSON, JSON.stringify). Each is refused here as a 422 validation_failed problem whose
 * `errors` name the place, like any other invalid field.
 */

/** Arrays and objects inside one another, the outermost counting as 1. */
export const MAX_JSON_DEPTH = 32;

/** At most this many offending places are listed in one problem. */
const MAX_LISTED = 20;

export interface InputIssue {
  path: string;
  message: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

function refuse(issues: InputIssue[], where: "body" | "query"): never {
  const listed = issues.slice(0, MAX_LISTED);
  const first = listed[0]!;
  const name = (path: string) => (where === "query" ? `Query parameter ${path}` : path === "" ? "The body" : path);
  const detail =
    issues.length === 1
      ? `${name(first.path)} ${first.message}.`
      : `${issues.length} ${where === "query" ? "query parameters" : "fields"} are invalid: ${listed.map((i) => name(i.path)).join(", ")}.`;
  throw new AppError("validation_failed", detail, { extra: { errors: listed } });
}

// A `\u` escape writing a NUL or a surrogate code unit. After JSON.parse these are the only ways either can
// be in a string: the text is decoded UTF-8 (an encoded surrogate becomes U+FFFD) and JSON forbids raw
// control characters in strings. A match after an escaped backslash (`\\u0000`, text) is a false alarm,
// which only costs the walk that then finds nothing.
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89abcdefABCDEF])/;

/**
 * One pass over JSON text, skipping string contents: the offset at which nesting first exceeds `maxDepth`
 * (or -1); and whether any `\u` escape may write a NUL or a lone surrogate (then the parsed value must be
 * walked). Malformed text is left to JSON.parse.
 */
export function scanJson(text: string, maxDepth = MAX_JSON_DEPTH): { tooDeepAt: number; suspect: boolean } {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // The closing quote is the next one preceded by an even number of backslashes (indexOf is native,
      // so long strings cost little).
      let close = i;
      for (;;) {
        close = text.indexOf('"', close + 1);
        if (close === -1) return { tooDeepAt: -1, suspect: SUSPECT_ESCAPE.test(text) };
        let k = close - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((close - 1 - k) % 2 === 0) break;
      }
      i = close;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return { tooDeepAt: i, suspect: false };
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return { tooDeepAt: -1, suspect: SUSPECT_ESCAPE.test(text) };
}

function formatPath(path: readonly (string | number)[]): string {
  let out = "";
  for (const key of path) out = typeof key === "number" ? `${out}[${key}]` : out === "" ? key : `${out}.${key}`;
  return out;
}

/**
 * The JSON path of the container opened at `offset` (only called on a refusal, so it may be slow): the
 * keys and indexes leading to it, read by a second small scan of the text before it.
 */
export function jsonPathAt(text: string, offset: number): string {
  // Per open container: its key so far (object) or item index (array).
  const stack: { array: boolean; key: string | number | null }[] = [];
  let lastString: string | null = null;
  for (let i = 0; i < offset; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      while (end < offset && text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1;
      try {
        lastString = JSON.parse(text.slice(i, end + 1)) as string;
      } catch {
        lastString = text.slice(i + 1, end);
      }
      i = end;
    } else if (c === 0x3a /* : */) {
      const top = stack.at(-1);
      if (top && !top.array) top.key = lastString;
    } else if (c === 0x2c /* , */) {
      const top = stack.at(-1);
      if (top?.array) top.key = (top.key as number) + 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      stack.push({ array: c === OPEN_BRACKET, key: c === OPEN_BRACKET ? 0 : null });
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      stack.pop();
    }
  }
  return formatPath(stack.map((s) => s.key).filter((k): k is string | number => k !== null));
}

// A NUL, or a surrogate code unit that is not half of a pair (no `u` flag: the regex sees code units).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BAD_STRING = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// Query and path parameters: also every other C0 control character and DEL (none belongs in an id,
// a name, a filter or a cursor).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BAD_PARAMETER = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function describe(match: string): string {
  const code = match.charCodeAt(0);
  const hex = code.toString(16).toUpperCase().padStart(4, "0");
  if (code === 0) return "contains a NUL character (U+0000)";
  if (code >= 0xd800 && code <= 0xdfff) return `contains a lone surrogate (U+${hex}): not valid Unicode`;
  return `contains a control character (U+${hex})`;
}

/** Every string (object keys too) of a parsed JSON value holding a NUL or a lone surrogate. */
export function findBadStrings(value: unknown): InputIssue[] {
  const issues: InputIssue[] = [];
  const path: (string | number)[] = [];
  const visit = (node: unknown): void => {
    if (issues.length >= MAX_LISTED) return;
    if (typeof node === "string") {
      const bad = BAD_STRING.exec(node);
      if (bad) issues.push({ path: formatPath(path), message: describe(bad[0]) });
    } else if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        path.push(i);
        visit(node[i]);
        path.pop();
      }
    } else if (node !== null && typeof node === "object") {
      for (const [key, child] of Object.entries(node)) {
        path.push(key);
        const bad = BAD_STRING.exec(key);
        if (bad) issues.push({ path: formatPath(path), message: `key ${describe(bad[0])}` });
        visit(child);
        path.pop();
      }
    }
  };
  visit(value);
  return issues;
}

/**
 * Parses a request body: nesting refused before JSON.parse (a linear scan of the text), then NUL and
 * lone surrogates in any string refused (a walk of the parsed value, only when the scan saw an escape
 * that can write one). Throws a 422 validation_failed AppError naming the place, or a 400 bad_request
 * for text that is not JSON.
 */
export function parseJsonBody(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const { tooDeepAt, suspect } = scanJson(text, maxDepth);
  if (tooDeepAt !== -1) {
    refuse([{ path: jsonPathAt(text, tooDeepAt), message: `is nested deeper than ${maxDepth} levels of arrays and objects` }], "body");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError("bad_request", "The body is not valid JSON.");
  }
  if (suspect) {
    const issues = findBadStrings(value);
    if (issues.length > 0) refuse(issues, "body");
  }
  return value;
}

/**
 * Query or path parameters: a NUL, any other C0 control character, DEL or a lone surrogate in a name or
 * value. Returns the issues (empty when clean); the caller chooses the answer (422 for a query, 404 for
 * a path segment, which names no resource).
 */
export function findBadParameters(params: Iterable<[string, string]>): InputIssue[] {
  const issues: InputIssue[] = [];
  for (const [name, value] of params) {
    const badName = BAD_PARAMETER.exec(name);
    if (badName) {
      issues.push({ path: name, message: `name ${describe(badName[0])}` });
      continue;
    }
    const bad = BAD_PARAMETER.exec(value);
    if (bad) issues.push({ path: name, message: describe(bad[0]) });
  }
  return issues;
}

/** Throws the 422 for bad query parameters (see findBadParameters). */
export function assertCleanQuery(params: Iterable<[string, string]>): void {
  const issues = findBadParameters(params);
  if (issues.length > 0) refuse(issues, "query");
}
