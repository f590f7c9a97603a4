import ts from "typescript";
import { findingAt, forEachNode, lineAt, literalText, type Finding, type SourceFile } from "./source-tree.js";

export const DUPLICATED_CONSTANTS = "duplicated-constants";

/** The job states as core defines them, and the file that defines them (the one place a list of them may be written). */
export interface JobStateDefinition {
  states: readonly string[];
  terminal: readonly string[];
  file: string;
}

const CONSTANT_NAME = /^[A-Z][A-Z0-9_]*$/;
const BULLMQ_CLASSES = new Set(["Queue", "Worker", "QueueEvents", "FlowProducer"]);

interface Definition {
  file: SourceFile;
  node: ts.VariableDeclaration;
  name: string;
  value: string;
}

const where = (d: Definition) => `${d.file.path}:${lineAt(d.file, d.node.getStart())}`;

/**
 * Shared constants defined more than once:
 * - an exported SCREAMING_CASE constant with a literal value, defined under the same name in two files;
 * - a BullMQ queue name: a `*_QUEUE` constant's value defined again as another constant, or a BullMQ
 *   Queue/Worker/QueueEvents/FlowProducer constructed with a literal name instead of the constant;
 * - the job states copied as a literal list (an array or a union type of every state, or of exactly the
 *   terminal states) outside the file that defines them.
 */
export function findDuplicatedConstants(files: readonly SourceFile[], jobStates: JobStateDefinition): Finding[] {
  const findings: Finding[] = [];
  const definitions: Definition[] = [];
  for (const file of files) {
    forEachNode(file, (node) => {
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && ts.isVariableDeclarationList(node.parent) && node.parent.flags & ts.NodeFlags.Const) {
        const value = literalText(node.initializer) ?? (ts.isNumericLiteral(node.initializer) ? node.initializer.text : undefined);
        if (value !== undefined) definitions.push({ file, node, name: node.name.text, value });
      }
      const copied = copiedStateList(node, jobStates);
      if (copied && file.path !== jobStates.file) {
        findings.push(findingAt(DUPLICATED_CONSTANTS, file, node, `a copy of core's ${copied} (${jobStates.file}): import it from @tick/core`));
      }
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && BULLMQ_CLASSES.has(node.expression.text) && importsFromBullmq(file, node.expression.text)) {
        const name = node.arguments?.[0];
        if (literalText(name) !== undefined) {
          findings.push(findingAt(DUPLICATED_CONSTANTS, file, node, `BullMQ ${node.expression.text} named by the literal ${name!.getText()}: use the queue constant from @tick/core (packages/core/src/queues.ts)`));
        }
      }
    });
  }

  const exported = definitions.filter((d) => CONSTANT_NAME.test(d.name) && isExportedTopLevel(d.node));
  for (const d of exported) {
    const others = exported.filter((o) => o.name === d.name && o.file !== d.file);
    if (others.length > 0) findings.push(findingAt(DUPLICATED_CONSTANTS, d.file, d.node, `${d.name} is also defined at ${others.map(where).join(", ")}: define it once, in a shared package, and import it`));
  }
  const queues = exported.filter((d) => d.name.endsWith("_QUEUE"));
  for (const d of definitions) {
    const queue = queues.find((q) => q.value === d.value && q.file !== d.file);
    // (Under the queue's own name and exported, the rule above has said it already.)
    if (queue && !(d.name === queue.name && exported.includes(d))) {
      findings.push(findingAt(DUPLICATED_CONSTANTS, d.file, d.node, `the queue name "${d.value}" is defined again (it is ${queue.name}, at ${where(queue)}): import ${queue.name}`));
    }
  }
  return findings;
}

function isExportedTopLevel(node: ts.VariableDeclaration): boolean {
  const statement = node.parent.parent;
  return ts.isVariableStatement(statement) && ts.isSourceFile(statement.parent) && !!statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

function importsFromBullmq(file: SourceFile, name: string): boolean {
  return new RegExp(`import\\s*\\{[^}]*\\b${name}\\b[^}]*\\}\\s*from\\s*["']bullmq["']`).test(file.text);
}

/** "JOB_STATES" or "TERMINAL_STATES" when `node` is a literal list of exactly those states. */
function copiedStateList(node: ts.Node, jobStates: JobStateDefinition): string | undefined {
  let items: (string | undefined)[] | undefined;
  if (ts.isArrayLiteralExpression(node)) items = node.elements.map((e) => literalText(e));
  else if (ts.isUnionTypeNode(node)) items = node.types.map((t) => (ts.isLiteralTypeNode(t) ? literalText(t.literal) : undefined));
  if (!items || items.some((i) => i === undefined)) return undefined;
  const set = new Set(items as string[]);
  const same = (list: readonly string[]) => set.size === list.length && list.every((s) => set.has(s));
  if (same(jobStates.states)) return "JOB_STATES";
  if (same(jobStates.terminal)) return "TERMINAL_STATES";
  return undefined;
}
