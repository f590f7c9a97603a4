/** What `run` rejects with (for assertions on the error itself); throws when it resolves instead. */
export async function rejectionOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  throw new Error("expected a failure, but it succeeded");
}
