import ts from "typescript";
import { findingAt, forEachNode, literalText, type Finding, type SourceFile } from "./source-tree.js";

const CONSOLE_DATA_PATH = "console-data-path";

/** The console's pages, layouts, server actions and route handlers (Next's app directory). */
const CONSOLE_APP = /^apps\/console\/src\/app\//;

/**
 * What the app directory may not import: the database clients and the context that holds them. Pages, actions
 * and route handlers call the services (apps/console/src/server/services), which own every database access
 * through the deps wired in server/api/deps.ts. A type-only import (a row type for a prop) reaches no database.
 */
const FORBIDDEN: readonly { module: RegExp; what: string }[] = [
  { module: /^@tick\/db(\/|$)/, what: "@tick/db (Prisma and the raw SQL)" },
  { module: /^(pg|@prisma\/.*)$/, what: "a database driver" },
  { module: /(^@\/server\/context$|\/server\/context$|^\.\.?\/(\.\.\/)*context$)/, what: "the server context (the clients themselves)" },
];

/** Every value import of a database client (or the context holding them) under apps/console/src/app. */
export function findConsoleDataPathViolations(files: readonly SourceFile[]): Finding[] {
  const findings: Finding[] = [];
  for (const file of files) {
    if (!CONSOLE_APP.test(file.path)) continue;
    forEachNode(file, (node) => {
      if (!ts.isImportDeclaration(node) && !ts.isExportDeclaration(node)) return;
      if (ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly : node.isTypeOnly) return;
      const specifier = literalText(node.moduleSpecifier);
      const hit = specifier !== undefined && FORBIDDEN.find((f) => f.module.test(specifier));
      if (hit) {
        findings.push(
          findingAt(CONSOLE_DATA_PATH, file, node, `${file.path} imports ${hit.what}: pages, actions and route handlers call a service (apps/console/src/server/services), which owns the database access`),
        );
      }
    });
  }
  return findings;
}
