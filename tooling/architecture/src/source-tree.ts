import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

/** One source file: its path from the repository root (forward slashes) and its text. */
export interface SourceFile {
  path: string;
  text: string;
}

/** Something a check found: where, and what is wrong there. */
export interface Finding {
  check: string;
  file: string;
  /** 1-based. */
  line: number;
  message: string;
}

const SOURCE_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
// Dependencies, build output and generated code (the Prisma client) are not the project's source.
const SKIPPED_DIRS = new Set(["node_modules", "dist", "generated", "coverage", "test-results", "playwright-report"]);

/** Every source file of the repository below `root`, hidden folders (.git, .next, .turbo, .data) and declaration files aside. */
export function readSourceTree(root: string): SourceFile[] {
  const files: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(full);
      } else if (SOURCE_FILE.test(entry.name) && !entry.name.endsWith(".d.ts")) {
        files.push({ path: path.relative(root, full).split(path.sep).join("/"), text: fs.readFileSync(full, "utf8") });
      }
    }
  };
  walk(root);
  return files.sort((a, b) => a.path.localeCompare(b.path));
}

const parsed = new WeakMap<SourceFile, ts.SourceFile>();

/** The file's syntax tree (parsed once per file). */
export function syntaxOf(file: SourceFile): ts.SourceFile {
  let tree = parsed.get(file);
  if (!tree) {
    const kind = /\.tsx$/.test(file.path) ? ts.ScriptKind.TSX : /\.(m|c)?js$/.test(file.path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
    tree = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true, kind);
    parsed.set(file, tree);
  }
  return tree;
}

/** Calls `visit` for every node of the file. */
export function forEachNode(file: SourceFile, visit: (node: ts.Node, tree: ts.SourceFile) => void): void {
  const tree = syntaxOf(file);
  const walk = (node: ts.Node) => {
    visit(node, tree);
    ts.forEachChild(node, walk);
  };
  walk(tree);
}

/** The 1-based line of a position in the file. */
export function lineAt(file: SourceFile, position: number): number {
  return syntaxOf(file).getLineAndCharacterOfPosition(position).line + 1;
}

/** A finding at a node (its first token, not its leading comments). */
export function findingAt(check: string, file: SourceFile, node: ts.Node, message: string): Finding {
  return { check, file: file.path, line: lineAt(file, node.getStart(syntaxOf(file))), message };
}

/** The text of a string literal or a template without substitutions; undefined for anything else. */
export function literalText(node: ts.Node | undefined): string | undefined {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
}

/** The initializer under `as const` / `satisfies` / parentheses. */
export function unwrap(node: ts.Expression): ts.Expression {
  while (ts.isAsExpression(node) || ts.isSatisfiesExpression(node) || ts.isParenthesizedExpression(node)) node = node.expression;
  return node;
}
