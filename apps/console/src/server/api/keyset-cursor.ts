import { AppError } from "@tick/core";

/** The problem for a cursor that is not one of ours (422 on the `cursor` field). */
export const invalidCursor = () =>
  new AppError("validation_failed", "The cursor is not valid.", { extra: { errors: [{ path: "cursor", message: "invalid cursor" }] } });

/**
 * Opaque keyset cursor for listings ordered by (timestamp DESC, id DESC): the position of the last row
 * of a page, so the next page costs the same however deep it is.
 */
export const keysetCursor = {
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
