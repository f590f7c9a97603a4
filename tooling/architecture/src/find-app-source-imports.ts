import path from "node:path";
import ts from "typescript";
import { findingAt, forEachNode, literalText, type Finding, type SourceFile } from "./source-tree.js";

const APP_SOURCE_IMPORTS = "app-source-imports";

/** The app a repository path belongs to (`apps/<name>/...`), and whether it is in the app's source. */
const APP_PATH = /^apps\/([^/]+)\/(src(?:\/|$))?/;
/** A package import that reaches into a workspace's source folder: `@tick/<name>/src` or below. */
const PACKAGE_SOURCE = /^@tick\/([^/]+)\/src(?:\/|$)/;

/**
 * Every module specifier of the file (import and export-from declarations, `import x = require()`, dynamic
 * `import()`, `require()`, and `import("...")` types) with the node to report it at.
 */
function moduleSpecifiers(file: SourceFile): { specifier: string; node: ts.Node }[] {
  const found: { specifier: string; node: ts.Node }[] = [];
  forEachNode(file, (node) => {
    let specifier: string | undefined;
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) specifier = literalText(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) specifier = literalText(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === "require"))) {
      specifier = literalText(node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) specifier = literalText(node.argument.literal);
    if (specifier !== undefined) found.push({ specifier, node });
  });
  return found;
}

/**
 * Every import of another app's source: a specifier that lands inside `apps/<name>/src` (relative, or a package
 * path such as `@tick/<name>/src/...`, the apps' packages being `@tick/<folder>`) from a file outside
 * `apps/<name>/`. An app's code is its own; what others need of it (its env schema) its package exports
 * (`@tick/<name>/env`), and code two apps share belongs in a package.
 */
export function findAppSourceImports(files: readonly SourceFile[]): Finding[] {
  const apps = new Set(files.flatMap((f) => APP_PATH.exec(f.path)?.[1] ?? []));
  const findings: Finding[] = [];
  for (const file of files) {
    const own = APP_PATH.exec(file.path)?.[1];
    for (const { specifier, node } of moduleSpecifiers(file)) {
      let target: string | undefined;
      if (specifier.startsWith("./") || specifier.startsWith("../")) {
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(file.path), specifier));
        const hit = APP_PATH.exec(resolved);
        if (hit?.[2] !== undefined) target = hit[1];
      } else {
        const name = PACKAGE_SOURCE.exec(specifier)?.[1];
        if (name !== undefined && apps.has(name)) target = name;
      }
      if (target !== undefined && target !== own) {
        findings.push(
          findingAt(
            APP_SOURCE_IMPORTS,
            file,
            node,
            `${file.path} imports "${specifier}", the source of apps/${target}: import what @tick/${target} exports (its package.json exports, e.g. @tick/${target}/env), or move shared code into a package`,
          ),
        );
      }
    }
  }
  return findings;
}
