import ts from "typescript";
import { findingAt, forEachNode, literalText, type Finding, type SourceFile } from "./source-tree.js";

export const ENV_READS = "env-reads";

/** Where process.env may be read: each app's env module and composition root (CONVENTIONS: Env and config). */
const ENV_READERS: readonly RegExp[] = [
  /^apps\/[^/]+\/src\/(env|main)\.ts$/,
  /^apps\/console\/src\/server\/env\.ts$/, // the console's env module: parsed once, on first use
  /^apps\/console\/src\/instrumentation\.ts$/, // Next.js' start hook: NEXT_RUNTIME picks the Node.js half
];

const MESSAGE =
  "process.env is read outside an app's env module or composition root (apps/*/src/env.ts, apps/*/src/main.ts, " +
  "apps/console/src/server/env.ts, apps/console/src/instrumentation.ts): parse it there and pass the value in";

/** Every read of process.env (`process.env`, `process["env"]`, `{ env } = process`, `import { env } from "node:process"`) outside ENV_READERS. */
export function findEnvReads(files: readonly SourceFile[]): Finding[] {
  const findings: Finding[] = [];
  for (const file of files) {
    if (ENV_READERS.some((re) => re.test(file.path))) continue;
    forEachNode(file, (node) => {
      const isProcess = (e: ts.Node) => ts.isIdentifier(e) && e.text === "process";
      if (
        (ts.isPropertyAccessExpression(node) && isProcess(node.expression) && node.name.text === "env") ||
        (ts.isElementAccessExpression(node) && isProcess(node.expression) && literalText(node.argumentExpression) === "env") ||
        (ts.isVariableDeclaration(node) &&
          node.initializer &&
          isProcess(node.initializer) &&
          ts.isObjectBindingPattern(node.name) &&
          node.name.elements.some((e) => (e.propertyName ?? e.name).getText() === "env")) ||
        (ts.isImportDeclaration(node) &&
          /^(node:)?process$/.test(literalText(node.moduleSpecifier) ?? "") &&
          node.importClause?.namedBindings &&
          ts.isNamedImports(node.importClause.namedBindings) &&
          node.importClause.namedBindings.elements.some((e) => (e.propertyName ?? e.name).text === "env"))
      ) {
        findings.push(findingAt(ENV_READS, file, node, MESSAGE));
      }
    });
  }
  return findings;
}
