import { AppError } from "@tick/core";

/** The problem for a cursor that is not one of ours (422 on the `cursor` field). */
export const invalidCursor = () =>
  new AppError("validation_failed", "The cursor is not valid.", { extra: { errors: [{ path: "cursor", message: "invalid cursor" }] } });

/**
 * Opaque keyset cursor for listings ordered by (timestamp DESC, id DESC): the position of the last row
 * of a page, so the next page costs the same however deep it is.
 */
const keysetCursor = {
  encode: (at: Date, id: string) => Buffer.from(JSON.stringify({ t: at.toISOString(), i: id })).toString("base64url"),
  decode: (cursor: string): { at: string; id: string } => {
    try {
      const { t, i } = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { t?: unknown; i?: unknown };
      if (typeof t === "string" && typeof i === "string" && !Number.isNaN(Date.parse(t)) && /^[0-9a-f-]{36}$/i.test(i)) return { at: t, id: i };
    } catch {
      // fall through
    }
    throw invalidCursor();
  },
};

/** Where a keyset page starts (the decoded cursor; none for the first page) and how many rows to fetch. */
export interface KeysetWindow {
  before?: { at: string; id: string };
  limit: number;
}

/**
 * One page of a listing ordered by (timestamp DESC, id DESC): `fetch` is asked for one row more than
 * `limit`, from the cursor's position, so the extra row says whether there is a next page without a count;
 * the next cursor is the position of the page's last row, whose timestamp `at` reads. (`fetch` comes
 * before `at` so the row type is inferred from it.)
 */
export async function fetchKeysetPage<Row extends { id: string }>(
  query: { limit: number; cursor?: string },
  fetch: (window: KeysetWindow) => Promise<Row[]>,
  at: (row: Row) => Date,
): Promise<{ page: Row[]; nextCursor: string | null }> {
  const rows = await fetch({ before: query.cursor ? keysetCursor.decode(query.cursor) : undefined, limit: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return { page, nextCursor: rows.length > query.limit && last ? keysetCursor.encode(at(last), last.id) : null };
}
