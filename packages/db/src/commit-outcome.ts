import { isDatabaseUnavailable, type PrismaClient } from "./client.js";

/**
 * The connection broke while COMMIT was in flight: the server may have committed or rolled back, and the
 * client cannot tell which. A failure before COMMIT was sent is different: Postgres rolls back a
 * transaction whose connection is gone, so nothing was changed. Callers must answer "outcome unknown",
 * never "nothing changed", for this one.
 */
export class CommitOutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super("the database connection was lost during COMMIT: the transaction may or may not have committed", { cause });
    this.name = "CommitOutcomeUnknownError";
  }
}

export function isCommitOutcomeUnknown(err: unknown): err is CommitOutcomeUnknownError {
  return err instanceof CommitOutcomeUnknownError;
}

/**
 * What a failed COMMIT means: a lost connection leaves the outcome unknown; an error the server answered
 * (a serialization failure, a deferred constraint) is a definite rollback and is passed on as it is.
 */
export function commitFailure(err: unknown): unknown {
  return isDatabaseUnavailable(err) ? new CommitOutcomeUnknownError(err) : err;
}

type TransactionClient = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];

/**
 * prisma.$transaction with the same promise as inTransaction: an error once the body has returned (Prisma
 * is sending COMMIT) that says the connection was lost becomes CommitOutcomeUnknownError.
 */
export async function prismaTransaction<T>(prisma: PrismaClient, fn: (tx: TransactionClient) => Promise<T>): Promise<T> {
  let committing = false;
  try {
    return await prisma.$transaction(async (tx) => {
      const result = await fn(tx);
      committing = true;
      return result;
    });
  } catch (err) {
    throw committing ? commitFailure(err) : err;
  }
}
