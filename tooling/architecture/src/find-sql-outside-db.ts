import ts from "typescript";
import { findingAt, forEachNode, type Finding, type SourceFile } from "./source-tree.js";

export const SQL_OUTSIDE_DB = "sql-outside-db";

const RAW_PRISMA = new Set(["$queryRaw", "$executeRaw", "$queryRawUnsafe", "$executeRawUnsafe"]);

/**
 * Every statement run outside packages/db (CONVENTIONS: hot-path SQL is plain SQL in one place): a
 * `.query(` call (pg's Pool, PoolClient and Client) or a raw Prisma call (`$queryRaw` and kin, tagged or
 * called).
 */
export function findSqlOutsideDb(files: readonly SourceFile[]): Finding[] {
  const findings: Finding[] = [];
  for (const file of files) {
    if (file.path.startsWith("packages/db/")) continue;
    forEachNode(file, (node) => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === "query") {
        findings.push(findingAt(SQL_OUTSIDE_DB, file, node, `SQL runs outside packages/db (${node.expression.getText()}(...)): add a function to packages/db/src/sql and call it`));
      } else if (ts.isPropertyAccessExpression(node) && RAW_PRISMA.has(node.name.text)) {
        findings.push(findingAt(SQL_OUTSIDE_DB, file, node, `raw SQL through Prisma (${node.name.text}) outside packages/db: add a function to packages/db/src/sql and call it`));
      }
    });
  }
  return findings;
}
