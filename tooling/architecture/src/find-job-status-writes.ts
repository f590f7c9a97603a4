import ts from "typescript";
import { findingAt, forEachNode, lineAt, syntaxOf, unwrap, type Finding, type SourceFile } from "./source-tree.js";

export const JOB_STATUS_WRITES_CHECK = "job-status-writes";

export const REGISTRY_FILE = "packages/db/src/sql/job-status-writes.ts";
const REGISTRY = "JOB_STATUS_WRITES";

/** The registry's shape (packages/db/src/sql/job-status-writes.ts), loosely typed so a test can plant a wrong entry. */
export type StatusWriteRegistry = Readonly<Record<string, { readonly from: readonly string[]; readonly to: Readonly<Record<string, string>> } | { readonly creates: string }>>;

/** Core's job state machine (packages/core/src/job-state-machine.ts). */
export interface JobStateMachine {
  states: readonly string[];
  transitions: Readonly<Record<string, Readonly<Record<string, string>>>>;
  initial: string;
}

/**
 * Each declared status write is a transition the state machine allows: from every state in `from`,
 * every event in `to` leads to the state named there; a creation creates jobs in the initial state.
 */
export function checkStatusWriteRegistry(registry: StatusWriteRegistry, machine: JobStateMachine, registryFile: SourceFile): Finding[] {
  const findings: Finding[] = [];
  const at = (name: string, message: string) => findings.push(entryFinding(registryFile, name, message));
  for (const [name, write] of Object.entries(registry)) {
    if ("creates" in write) {
      if (write.creates !== machine.initial) at(name, `${name} creates jobs as ${write.creates}, but jobs start ${machine.initial} (INITIAL_JOB_STATE)`);
      continue;
    }
    if (write.from.length === 0) at(name, `${name} moves jobs out of no state`);
    if (Object.keys(write.to).length === 0) at(name, `${name} names no event`);
    for (const from of write.from) {
      for (const [event, to] of Object.entries(write.to)) {
        const allowed = machine.transitions[from]?.[event];
        if (allowed !== to) {
          at(name, `${name}: ${from} --${event}--> ${to} is not a transition of core's state machine (${allowed ? `${event} from ${from} leads to ${allowed}` : `${event} is refused in ${from}`})`);
        }
      }
    }
  }
  return findings;
}

/**
 * Every statement that writes jobs.status (an `UPDATE jobs ... SET status =` or an `INSERT INTO jobs`,
 * in any string or template) takes its states from the registry: it interpolates an entry of
 * JOB_STATUS_WRITES, and no job state is written into it as a quoted literal where a status is
 * compared or assigned (in the write itself, or in a `SELECT ... FROM jobs ... FOR UPDATE` that picks
 * its rows). Also: every registry entry is used by some statement, and jobs.status is not written
 * through Prisma.
 */
export function findUndeclaredStatusWrites(files: readonly SourceFile[], registry: StatusWriteRegistry, states: readonly string[]): Finding[] {
  const findings: Finding[] = [];
  const used = new Set<string>();
  const stateSet = new Set(states);
  const registryFile = files.find((f) => f.path === REGISTRY_FILE);

  for (const file of files) {
    if (!/\bjobs\b|\.job\./.test(file.text)) continue;
    forEachNode(file, (node) => {
      if (isPrismaStatusWrite(node)) {
        findings.push(findingAt(JOB_STATUS_WRITES_CHECK, file, node, `jobs.status written through Prisma: status changes are SQL statements in packages/db/src/sql declared in ${REGISTRY}`));
      }
    });
  }
  forEachStatusWrite(files, ({ file, sql, writes, referenced }) => {
    const line = (offset: number) => lineAt(file, sql.start + offset);
    for (const name of referenced) {
      if (registry[name]) used.add(name);
      else findings.push({ check: JOB_STATUS_WRITES_CHECK, file: file.path, line: line(writes[0]!.start), message: `${REGISTRY}.${name} is not declared in ${REGISTRY_FILE}` });
    }
    if (referenced.size === 0) {
      findings.push({
        check: JOB_STATUS_WRITES_CHECK,
        file: file.path,
        line: line(writes[0]!.start),
        message: `writes jobs.status without declaring the transition: take its states from an entry of ${REGISTRY} (${REGISTRY_FILE})`,
      });
    }
    const regions = [...writes, ...lockingReadsOfJobs(sql.text)];
    for (const offset of quotedStates(sql.text, regions, stateSet)) {
      findings.push({ check: JOB_STATUS_WRITES_CHECK, file: file.path, line: line(offset), message: `a job state written into a status-writing statement as a literal: interpolate it from ${REGISTRY} (stateLiteral, statusIn)` });
    }
    for (const e of sql.expressions) {
      forEachIn(e, (n) => {
        if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && stateSet.has(n.text)) {
          findings.push(findingAt(JOB_STATUS_WRITES_CHECK, file, n, `the state "${n.text}" is named in code in a status-writing statement: take it from ${REGISTRY}`));
        }
      });
    }
  });

  if (registryFile) {
    for (const name of Object.keys(registry)) {
      if (!used.has(name)) findings.push(entryFinding(registryFile, name, `${REGISTRY}.${name} is declared but no statement that writes jobs.status uses it`));
    }
  }
  return findings;
}

/** Where every end of a job is written (packages/db/src/sql/finish.ts), and the builder its statements go through. */
export const FINISH_PATH_FILE = "packages/db/src/sql/finish.ts";
const FINISH_BUILDER = "endingStatement";

/**
 * The finish path: a statement that can move jobs to a terminal state (one of its declared transitions leads
 * to one) is in FINISH_PATH_FILE and is composed by its builder, `endingStatement(...)`, which appends what
 * must follow every end (the completion webhooks, and whatever is added there later). A terminal write
 * anywhere else, or in that file without the builder, would end jobs without it.
 */
export function findTerminalWritesOutsideFinishPath(files: readonly SourceFile[], registry: StatusWriteRegistry, terminal: readonly string[]): Finding[] {
  const findings: Finding[] = [];
  const ends = new Set(terminal);
  const endingEntries = new Set(
    Object.entries(registry)
      .filter(([, write]) => ("creates" in write ? ends.has(write.creates) : Object.values(write.to).some((to) => ends.has(to))))
      .map(([name]) => name),
  );
  forEachStatusWrite(files, ({ file, node, sql, writes, referenced }) => {
    const ending = [...referenced].filter((name) => endingEntries.has(name));
    if (ending.length === 0) return;
    const at = { check: JOB_STATUS_WRITES_CHECK, file: file.path, line: lineAt(file, sql.start + writes[0]!.start) };
    const states = ending.flatMap((name) => {
      const write = registry[name]!;
      return "creates" in write ? [write.creates] : Object.values(write.to).filter((to) => ends.has(to));
    });
    const what = `${ending.join(", ")} ends jobs (${[...new Set(states)].join(", ")})`;
    if (file.path !== FINISH_PATH_FILE) {
      findings.push({ ...at, message: `${what} outside the finish path: a terminal status write is a statement in ${FINISH_PATH_FILE} composed by ${FINISH_BUILDER}, which writes what follows every end (the completion webhooks)` });
    } else if (!isArgumentOf(node, FINISH_BUILDER)) {
      findings.push({ ...at, message: `${what} without ${FINISH_BUILDER}: what must follow every end (the completion webhooks) would be skipped` });
    }
  });
  return findings;
}

/** One statement that writes jobs.status: its node and SQL, the writes in it, and the registry entries it interpolates. */
interface StatusWrite {
  file: SourceFile;
  node: ts.Node;
  sql: { start: number; text: string; expressions: ts.Expression[] };
  writes: Region[];
  referenced: ReadonlySet<string>;
}

/** Calls `visit` for every statement (string or template) that writes jobs.status: an `UPDATE jobs ... SET status =` or an `INSERT INTO jobs`. */
function forEachStatusWrite(files: readonly SourceFile[], visit: (write: StatusWrite) => void): void {
  for (const file of files) {
    if (!/\bjobs\b/.test(file.text)) continue;
    const aliases = registryAliases(file);
    forEachNode(file, (node) => {
      const sql = sqlOf(file, node);
      if (!sql || !/\bUPDATE\s+jobs\b|\bINSERT\s+INTO\s+jobs\b/i.test(sql.text)) return;
      const writes = statusWrites(sql.text);
      if (writes.length === 0) return;
      visit({ file, node, sql, writes, referenced: new Set(sql.expressions.flatMap((e) => referencedEntries(e, aliases))) });
    });
  }
}

/** Whether `node` is (part of) an argument of a call to the function named `callee`. */
function isArgumentOf(node: ts.Node, callee: string): boolean {
  for (let n: ts.Node = node; n.parent; n = n.parent) {
    const parent = n.parent;
    if (ts.isCallExpression(parent) && parent.arguments.includes(n as ts.Expression) && ts.isIdentifier(parent.expression) && parent.expression.text === callee) return true;
  }
  return false;
}

function entryFinding(registryFile: SourceFile, name: string, message: string): Finding {
  const m = new RegExp(`^(\\s*)${name}\\s*:`, "m").exec(registryFile.text);
  return { check: JOB_STATUS_WRITES_CHECK, file: registryFile.path, line: m ? lineAt(registryFile, m.index + m[1]!.length) : 1, message };
}

/** `const x = JOB_STATUS_WRITES.name` in the file: x → name. */
function registryAliases(file: SourceFile): Map<string, string> {
  const aliases = new Map<string, string>();
  forEachNode(file, (node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      const name = registryEntry(unwrap(node.initializer));
      if (name) aliases.set(node.name.text, name);
    }
  });
  return aliases;
}

const registryEntry = (node: ts.Node): string | undefined =>
  ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === REGISTRY ? node.name.text : undefined;

function referencedEntries(expression: ts.Expression, aliases: Map<string, string>): string[] {
  const names: string[] = [];
  forEachIn(expression, (n) => {
    const direct = registryEntry(n);
    if (direct) names.push(direct);
    else if (ts.isIdentifier(n) && aliases.has(n.text) && !(ts.isPropertyAccessExpression(n.parent) && n.parent.name === n)) names.push(aliases.get(n.text)!);
  });
  return names;
}

function forEachIn(node: ts.Node, visit: (n: ts.Node) => void): void {
  visit(node);
  ts.forEachChild(node, (child) => forEachIn(child, visit));
}

function isPrismaStatusWrite(node: ts.Node): boolean {
  return (
    ts.isCallExpression(node) &&
    ts.isPropertyAccessExpression(node.expression) &&
    /^(create|createMany|update|updateMany|upsert)$/.test(node.expression.name.text) &&
    ts.isPropertyAccessExpression(node.expression.expression) &&
    node.expression.expression.name.text === "job" &&
    node.arguments.some((a) => /\bstatus\s*:/.test(a.getText()))
  );
}

/**
 * The SQL text of a string or template, with each `${...}` and each `--` comment blanked (same length,
 * so offsets stay file offsets), and the interpolated expressions.
 */
function sqlOf(file: SourceFile, node: ts.Node): { start: number; text: string; expressions: ts.Expression[] } | undefined {
  const tree = syntaxOf(file);
  if (!(ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node))) return undefined;
  const start = node.getStart(tree) + 1;
  const chars = file.text.slice(start, node.end - 1).split("");
  const expressions: ts.Expression[] = [];
  if (ts.isTemplateExpression(node)) {
    let previousEnd = node.head.end; // just after "${"
    for (const span of node.templateSpans) {
      for (let i = previousEnd - 2; i < span.literal.getStart(tree) + 1; i++) chars[i - start] = "§";
      expressions.push(span.expression);
      previousEnd = span.literal.end;
    }
  }
  const text = chars.join("").replace(/--[^\n]*/g, (c) => " ".repeat(c.length));
  return { start, text, expressions };
}

/** Paren depth of each character of `text`, and whether it lies inside a quoted SQL literal. */
function layout(text: string): { depth: number[]; quoted: boolean[] } {
  const depth: number[] = [];
  const quoted: boolean[] = [];
  let d = 0;
  let inQuote = false;
  // "(" belongs to the level it opens, ")" to the level it returns to.
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") inQuote = !inQuote;
    else if (!inQuote && c === "(") d++;
    else if (!inQuote && c === ")") d--;
    depth.push(d);
    quoted.push(inQuote || c === "'");
  }
  return { depth, quoted };
}

interface Region {
  start: number;
  end: number;
}

/** Where the statement containing `from` ends: at the parenthesis that closes around it, or the end of the text. */
function enclosingEnd(text: string, from: number, depth: number[]): number {
  for (let i = from; i < text.length; i++) if (depth[i]! < depth[from]!) return i;
  return text.length;
}

/** The writes of jobs.status: `UPDATE jobs ... SET ... status = ...` and `INSERT INTO jobs`, each up to where its statement ends. */
function statusWrites(text: string): Region[] {
  const { depth, quoted } = layout(text);
  const writes: Region[] = [];
  for (const m of text.matchAll(/\bINSERT\s+INTO\s+jobs\b/gi)) if (!quoted[m.index]) writes.push({ start: m.index, end: enclosingEnd(text, m.index, depth) });
  for (const m of text.matchAll(/\bUPDATE\s+jobs\b/gi)) {
    if (quoted[m.index]) continue;
    const end = enclosingEnd(text, m.index, depth);
    const level = depth[m.index]!;
    const atLevel = (re: RegExp, from: number, to: number) => {
      for (const k of text.slice(from, to).matchAll(re)) if (depth[from + k.index] === level && !quoted[from + k.index]) return from + k.index;
      return -1;
    };
    const set = atLevel(/\bSET\b/gi, m.index, end);
    if (set < 0) continue;
    const setEnd = atLevel(/\b(WHERE|FROM|RETURNING)\b/gi, set, end);
    const list = text.slice(set + 3, setEnd < 0 ? end : setEnd);
    // An assignment to status at the list's own level: after SET or a comma at that level.
    let item = 0;
    let writesStatus = false;
    for (let i = 0; i <= list.length; i++) {
      if (i === list.length || (list[i] === "," && depth[set + 3 + i] === level && !quoted[set + 3 + i])) {
        if (/^\s*status\s*=/i.test(list.slice(item, i))) writesStatus = true;
        item = i + 1;
      }
    }
    if (writesStatus) writes.push({ start: m.index, end });
  }
  return writes;
}

/** Bodies of CTEs that lock rows of jobs (`SELECT ... FROM jobs ... FOR UPDATE`): they pick the rows a write then moves. */
function lockingReadsOfJobs(text: string): Region[] {
  const { depth } = layout(text);
  const reads: Region[] = [];
  for (const m of text.matchAll(/\b[a-z_]\w*\s+AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\(/gi)) {
    const start = m.index + m[0].length;
    const end = enclosingEnd(text, start, depth);
    const body = text.slice(start, end);
    if (/^\s*SELECT\b/i.test(body) && /\bFROM\s+jobs\b/i.test(body) && /\bFOR\s+UPDATE\b/i.test(body)) reads.push({ start, end });
  }
  return reads;
}

/** Offsets of job states written as quoted literals where a status is compared or assigned, inside `regions`. */
function quotedStates(text: string, regions: Region[], states: Set<string>): number[] {
  const offsets = new Set<number>();
  const inRegion = (i: number) => regions.some((r) => r.start <= i && i < r.end);
  const note = (i: number) => inRegion(i) && offsets.add(i);
  // status = 'x', status <> 'x', $5 = 'x' (a parameter that carries a status)
  for (const m of text.matchAll(/(?:\b[\w.]*status|\$\d+)\s*(?:=|<>|!=)\s*'(\w+)'/gi)) if (states.has(m[1]!)) note(m.index + m[0].lastIndexOf("'" + m[1]));
  // status IN ('x', 'y')
  for (const m of text.matchAll(/\b[\w.]*status\s+(?:NOT\s+)?IN\s*\(([^)]*)\)/gi)) {
    for (const q of m[1]!.matchAll(/'(\w+)'/g)) if (states.has(q[1]!)) note(m.index + m[0].indexOf(m[1]!) + q.index);
  }
  for (const r of regions) {
    const region = text.slice(r.start, r.end);
    // SET status = <value>: every state in the value (a CASE's branches), up to the next assignment
    for (const m of region.matchAll(/(?:\bSET\s+|,\s*)status\s*=([\s\S]*?)(?=,\s*\w+\s*=|\bWHERE\b|\bFROM\b|\bRETURNING\b|$)/gi)) {
      for (const q of m[1]!.matchAll(/'(\w+)'/g)) if (states.has(q[1]!)) note(r.start + m.index + m[0].indexOf(m[1]!) + q.index);
    }
    // INSERT INTO jobs: a literal state anywhere in the row it inserts
    if (/^INSERT\s+INTO\s+jobs\b/i.test(region)) for (const q of region.matchAll(/'(\w+)'/g)) if (states.has(q[1]!)) note(r.start + q.index);
  }
  return [...offsets].sort((a, b) => a - b);
}
