import ts from "typescript";
import { findingAt, literalText, syntaxOf, unwrap, type Finding, type SourceFile } from "./source-tree.js";

export const API_ROUTES = "api-routes";

export const CONTRACT_ROUTES = "packages/contract/src/routes.ts";
const HANDLERS = /^apps\/console\/src\/app\/api\/v1\/(?:(.*)\/)?route\.tsx?$/;
const HTTP_METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);

interface ContractRoute {
  name: string;
  method?: string;
  path?: string;
  node: ts.Node;
}

/** The wrappers that bind a handler to its contract route: authenticated, public (sign-up), platform operator, the person's own account. */
const ROUTE_WRAPPERS = new Set(["apiRoute", "publicApiRoute", "operatorApiRoute", "accountApiRoute"]);

/**
 * The route table and the handlers agree: every route in packages/contract/src/routes.ts has a handler
 * file under apps/console/src/app/api/v1 whose path is the route's, exporting the route's method as
 * `apiRoute("<name>", ...)` (or its public and platform-operator kin, publicApiRoute and operatorApiRoute);
 * every handler there is such a route (one handler per route).
 */
export function findRouteMismatches(files: readonly SourceFile[]): Finding[] {
  const findings: Finding[] = [];
  const contract = files.find((f) => f.path === CONTRACT_ROUTES);
  if (!contract) return [{ check: API_ROUTES, file: CONTRACT_ROUTES, line: 1, message: "the route table is missing" }];
  const routes = readRouteTable(contract, findings);
  const handled = new Map<string, string>(); // route name → the handler that serves it

  for (const file of files) {
    const match = HANDLERS.exec(file.path);
    if (!match) continue;
    const urlPath = "/" + (match[1] ?? "").replace(/\[([^\]]+)\]/g, "{$1}");
    let exportsAny = false;
    for (const statement of syntaxOf(file).statements) {
      for (const { method, node, init } of exportedMethods(statement)) {
        exportsAny = true;
        const call = init && unwrap(init);
        const name = call && ts.isCallExpression(call) && ts.isIdentifier(call.expression) && ROUTE_WRAPPERS.has(call.expression.text) ? literalText(call.arguments[0]) : undefined;
        if (name === undefined) {
          findings.push(findingAt(API_ROUTES, file, node, `${method} does not go through apiRoute("<route name>", ...), so it is no route of the contract`));
          continue;
        }
        const route = routes.get(name);
        if (!route) {
          findings.push(findingAt(API_ROUTES, file, node, `apiRoute("${name}"): no route of that name in ${CONTRACT_ROUTES}`));
          continue;
        }
        if (route.method?.toUpperCase() !== method || route.path !== urlPath) {
          findings.push(findingAt(API_ROUTES, file, node, `${method} ${urlPath} serves "${name}", which the contract declares as ${route.method?.toUpperCase()} ${route.path}`));
        }
        const other = handled.get(name);
        if (other) findings.push(findingAt(API_ROUTES, file, node, `"${name}" is already served by ${other}`));
        else handled.set(name, `${method} in ${file.path}`);
      }
    }
    if (!exportsAny) findings.push({ check: API_ROUTES, file: file.path, line: 1, message: "a route file that exports no HTTP method handler" });
  }

  for (const route of routes.values()) {
    if (!handled.has(route.name)) {
      const dir = (route.path ?? "").replace(/\{([^}]+)\}/g, "[$1]");
      findings.push(
        findingAt(API_ROUTES, contract, route.node, `"${route.name}" has no handler: apps/console/src/app/api/v1${dir}/route.ts should export ${route.method?.toUpperCase()} = apiRoute("${route.name}", ...)`),
      );
    }
  }
  return findings;
}

/** The `routes` object of the contract: each route's name, method and path (both must be literals). */
function readRouteTable(contract: SourceFile, findings: Finding[]): Map<string, ContractRoute> {
  const routes = new Map<string, ContractRoute>();
  let table: ts.ObjectLiteralExpression | undefined;
  for (const statement of syntaxOf(contract).statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const d of statement.declarationList.declarations) {
      if (ts.isIdentifier(d.name) && d.name.text === "routes" && d.initializer && ts.isObjectLiteralExpression(unwrap(d.initializer))) table = unwrap(d.initializer) as ts.ObjectLiteralExpression;
    }
  }
  if (!table) {
    findings.push({ check: API_ROUTES, file: contract.path, line: 1, message: "no `routes` object literal to read" });
    return routes;
  }
  for (const property of table.properties) {
    if (!ts.isPropertyAssignment(property) || !ts.isObjectLiteralExpression(unwrap(property.initializer))) {
      findings.push(findingAt(API_ROUTES, contract, property, "a route that is not written as `name: { method, path, ... }`"));
      continue;
    }
    const name = property.name.getText();
    const field = (key: string) => {
      const p = (unwrap(property.initializer) as ts.ObjectLiteralExpression).properties.find((q) => ts.isPropertyAssignment(q) && q.name.getText() === key);
      return p && ts.isPropertyAssignment(p) ? literalText(p.initializer) : undefined;
    };
    const route = { name, method: field("method"), path: field("path"), node: property };
    if (route.method === undefined || route.path === undefined) findings.push(findingAt(API_ROUTES, contract, property, `"${name}": method and path must be string literals`));
    routes.set(name, route);
  }
  return routes;
}

/** The HTTP method handlers a top-level statement exports, with their initializers. */
function exportedMethods(statement: ts.Statement): { method: string; node: ts.Node; init?: ts.Expression }[] {
  const exported = (s: ts.Statement) => ts.canHaveModifiers(s) && !!ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  if (ts.isVariableStatement(statement) && exported(statement)) {
    return statement.declarationList.declarations
      .filter((d) => ts.isIdentifier(d.name) && HTTP_METHODS.has(d.name.text))
      .map((d) => ({ method: (d.name as ts.Identifier).text, node: d, init: d.initializer }));
  }
  if (ts.isFunctionDeclaration(statement) && exported(statement) && statement.name && HTTP_METHODS.has(statement.name.text)) {
    return [{ method: statement.name.text, node: statement }];
  }
  if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
    return statement.exportClause.elements.filter((e) => HTTP_METHODS.has(e.name.text)).map((e) => ({ method: e.name.text, node: e }));
  }
  return [];
}
