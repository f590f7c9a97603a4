// The API pipeline's input hygiene (src/server/api/input-hygiene.ts), without a server: the depth scan,
// the NUL / lone-surrogate walk and the parameter check, with their exact problems; and the cost of the
// whole body check on a 1 MB batch body.
import { describe, expect, it } from "vitest";
import { AppError, toProblem } from "@tick/core";
import { assertCleanQuery, findBadParameters, findBadStrings, jsonPathAt, MAX_JSON_DEPTH, parseJsonBody, scanJson } from "../src/server/api/input-hygiene";

function problemOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return toProblem(err);
  }
  throw new Error("expected a refusal");
}

const nested = (levels: number, inner = "1") => '{"a":'.repeat(levels) + inner + "}".repeat(levels);

describe("scanJson", () => {
  it("counts nesting outside strings only, through escapes", () => {
    expect(scanJson(nested(MAX_JSON_DEPTH)).tooDeepAt).toBe(-1);
    expect(scanJson(nested(MAX_JSON_DEPTH + 1)).tooDeepAt).toBe(MAX_JSON_DEPTH * 5);
    expect(scanJson(JSON.stringify({ s: "[".repeat(1000) + '\\"{{{' })).tooDeepAt).toBe(-1);
    expect(scanJson(JSON.stringify(["\\", "[[[["])).tooDeepAt).toBe(-1);
    expect(scanJson(`["\\\\"${",[".repeat(40)}`).tooDeepAt).toBeGreaterThan(0);
    expect(scanJson("[".repeat(5000)).tooDeepAt).toBe(MAX_JSON_DEPTH);
  });

  it("flags \\u escapes that may write a NUL or a surrogate, and nothing else", () => {
    expect(scanJson(JSON.stringify({ a: "plain \n\t é 😀" })).suspect).toBe(false);
    expect(scanJson('{"a":"\\u00e9\\u0041"}').suspect).toBe(false);
    expect(scanJson('{"a":"\\u0000"}').suspect).toBe(true);
    expect(scanJson('{"a":"\\uD800"}').suspect).toBe(true);
    expect(scanJson('{"a":"\\udfff"}').suspect).toBe(true);
    expect(scanJson('{"a":"\\ud83d\\ude00"}').suspect).toBe(true); // a valid pair: the walk decides
    expect(scanJson(`{"a":"\\\\u0000"}`).suspect).toBe(true); // an escaped backslash then text: a false alarm, the walk finds nothing
    expect(parseJsonBody(`{"a":"\\\\u0000"}`)).toEqual({ a: "\\u0000" });
  });

  it("stays linear on a string full of escapes", () => {
    const text = JSON.stringify({ a: "\n".repeat(1_000_000), b: "\"".repeat(1_000_000), c: "\\".repeat(1_000_000) + "\"" });
    const started = performance.now();
    expect(scanJson(text).tooDeepAt).toBe(-1);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("parseJsonBody", () => {
  it("returns the parsed value of clean JSON, surrogate pairs included", () => {
    expect(parseJsonBody('{"a":[1,{"b":"\\ud83d\\ude00"}]}')).toEqual({ a: [1, { b: "😀" }] });
  });

  it("refuses nesting deeper than 32 before parsing, naming where (422 validation_failed)", () => {
    const problem = problemOf(() => parseJsonBody(`{"target":{},"metadata":${nested(5000)}}`));
    expect(problem).toMatchObject({ status: 422, type: "https://tick.dev/problems/validation-failed" });
    const errors = problem.errors as { path: string; message: string }[];
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe(`metadata${".a".repeat(MAX_JSON_DEPTH - 1)}`);
    expect(errors[0]!.message).toBe("is nested deeper than 32 levels of arrays and objects");
    expect(problemOf(() => parseJsonBody("[".repeat(5000))).status).toBe(422);
  });

  it("refuses NUL and lone surrogates in values and keys, with their JSON paths", () => {
    const problem = problemOf(() =>
      parseJsonBody('{"target":{"headers":{"x-a":"v\\u0000x"}},"jobs":[{},{"m":"\\ud800"}],"k\\udc00":1,"ok":"\\ud83d\\ude00"}'),
    );
    expect(problem).toMatchObject({ status: 422, type: "https://tick.dev/problems/validation-failed" });
    expect(problem.detail).toMatch(/^3 fields are invalid: /);
    expect(problem.errors).toEqual([
      { path: "target.headers.x-a", message: "contains a NUL character (U+0000)" },
      { path: "jobs[1].m", message: "contains a lone surrogate (U+D800): not valid Unicode" },
      { path: "k\udc00", message: "key contains a lone surrogate (U+DC00): not valid Unicode" },
    ]);
    expect(problemOf(() => parseJsonBody('"\\u0000"'))).toMatchObject({ detail: "The body contains a NUL character (U+0000).", errors: [{ path: "" }] });
  });

  it("answers text that is not JSON with 400 bad_request", () => {
    for (const text of ["", "{not json", '{"a":', "[1,]"]) expect(problemOf(() => parseJsonBody(text)).type).toBe("https://tick.dev/problems/bad-request");
  });

  it("checks a 1 MB batch body in about the time of JSON.parse again, or less", () => {
    // 1,000 jobs of ~1 KB: a JSON body (escaped quotes), headers, metadata with non-ASCII text.
    const job = (i: number) => ({
      idempotencyKey: `order-${i}`,
      target: {
        method: "POST",
        url: `https://93.184.216.34/hooks/orders/${i}`,
        headers: { "x-a": "v", authorization: "Bearer abcdefghijklmnopqrstuvwxyz" },
        body: JSON.stringify({ order: i, customer: `c-${i}`, lines: Array.from({ length: 15 }, (_, n) => ({ sku: `sku-${n}`, qty: n, price: n * 1.5 })) }),
      },
      delayMs: 3_600_000,
      maxAttempts: 5,
      metadata: { customer: `c-${i}`, note: "é ü ß 😀 line\nbreak", tags: ["a", "b"] },
    });
    const body = { jobs: Array.from({ length: 1000 }, (_, i) => job(i)) };
    const text = JSON.stringify(body);
    // The same body as a client that escapes every non-ASCII character writes it: the walk runs too.
    const escaped = text.replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
    expect(text.length).toBeGreaterThanOrEqual(1_000_000);
    const time = (fn: () => unknown) => {
      const runs: number[] = [];
      for (let i = 0; i < 31; i++) {
        const started = performance.now();
        fn();
        runs.push(performance.now() - started);
      }
      return runs.sort((a, b) => a - b)[15]!;
    };
    const parse = time(() => JSON.parse(text));
    const scan = time(() => scanJson(text));
    const checked = time(() => parseJsonBody(text));
    const walk = time(() => findBadStrings(body));
    const checkedEscaped = time(() => parseJsonBody(escaped));
    console.log(
      `input hygiene, ${(text.length / 1e6).toFixed(2)} MB batch body of 1,000 jobs (medians of 31): JSON.parse ${parse.toFixed(2)} ms; ` +
        `depth/escape scan ${scan.toFixed(2)} ms; parseJsonBody ${checked.toFixed(2)} ms; with \\u escapes, so the value is walked too, ` +
        `${checkedEscaped.toFixed(2)} ms (walk alone ${walk.toFixed(2)} ms)`,
    );
    expect(scanJson(escaped).suspect).toBe(true); // the emoji is written as a surrogate pair of escapes
    expect(scan).toBeLessThan(Math.max(10, parse * 2));
  });
});

describe("findBadStrings", () => {
  it("finds nothing in clean values and stops listing at 20", () => {
    expect(findBadStrings({ a: ["x", 1, null, { b: "😀" }] })).toEqual([]);
    expect(findBadStrings(Array.from({ length: 50 }, () => "\u0000"))).toHaveLength(20);
  });
});

describe("query and path parameters", () => {
  it("refuses NUL, other C0 controls, DEL and lone surrogates, in names and values", () => {
    expect(findBadParameters([["queue", "default"], ["q", "é 😀 a b"]])).toEqual([]);
    expect(findBadParameters([["queue", "\u0000"], ["a", "x\ty"], ["b", "\u007f"], ["c", "\ud800"], ["d\r\n", "1"]])).toEqual([
      { path: "queue", message: "contains a NUL character (U+0000)" },
      { path: "a", message: "contains a control character (U+0009)" },
      { path: "b", message: "contains a control character (U+007F)" },
      { path: "c", message: "contains a lone surrogate (U+D800): not valid Unicode" },
      { path: "d\r\n", message: "name contains a control character (U+000D)" },
    ]);
    const problem = problemOf(() => assertCleanQuery(new URLSearchParams("targetId=%00")));
    expect(problem).toMatchObject({
      status: 422,
      type: "https://tick.dev/problems/validation-failed",
      detail: "Query parameter targetId contains a NUL character (U+0000).",
      errors: [{ path: "targetId", message: "contains a NUL character (U+0000)" }],
    });
  });

  it("jsonPathAt names array items and keys with escapes", () => {
    const text = '{"jobs":[{},{"a\\"b":[0,[';
    expect(jsonPathAt(text, text.length - 1)).toBe('jobs[1].a"b[1]');
  });
});
