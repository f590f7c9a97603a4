import { findAppSourceImports } from "./find-app-source-imports.js";
import { findConsoleDataPathViolations } from "./find-console-data-path.js";
import { findDuplicatedConstants, type JobStateDefinition } from "./find-duplicated-constants.js";
import { findEnvReads } from "./find-env-reads.js";
import {
  checkStatusWriteRegistry,
  findTerminalWritesOutsideFinishPath,
  findUndeclaredStatusWrites,
  JOB_STATUS_WRITES_CHECK,
  REGISTRY_FILE,
  type JobStateMachine,
  type StatusWriteRegistry,
} from "./find-job-status-writes.js";
import { findRouteMismatches } from "./find-route-mismatches.js";
import { findSqlOutsideDb } from "./find-sql-outside-db.js";
import type { Finding, SourceFile } from "./source-tree.js";

export interface ArchitectureFacts {
  jobStates: JobStateDefinition;
  machine: JobStateMachine;
  registry: StatusWriteRegistry;
}

/** Every check over one set of files (the tree, or a test's planted files). */
export function checkArchitecture(files: readonly SourceFile[], facts: ArchitectureFacts): Finding[] {
  const registryFile = files.find((f) => f.path === REGISTRY_FILE);
  return [
    ...findEnvReads(files),
    ...findSqlOutsideDb(files),
    ...findDuplicatedConstants(files, facts.jobStates),
    ...findRouteMismatches(files),
    ...findConsoleDataPathViolations(files),
    ...findAppSourceImports(files),
    ...(registryFile
      ? checkStatusWriteRegistry(facts.registry, facts.machine, registryFile)
      : [{ check: JOB_STATUS_WRITES_CHECK, file: REGISTRY_FILE, line: 1, message: "the registry of status writes is missing" }]),
    ...findUndeclaredStatusWrites(files, facts.registry, facts.machine.states),
    ...findTerminalWritesOutsideFinishPath(files, facts.registry, facts.jobStates.terminal),
  ];
}
