"use client";

import { useSyncExternalStore } from "react";

const noSubscription = () => () => {};

/**
 * The `token` a mailed or shown link carries in its fragment (`#token=…`), which browsers never send to a
 * server: undefined while rendered on the server, then the token, or null when the link has none.
 */
export function useFragmentToken(): string | null | undefined {
  return useSyncExternalStore(
    noSubscription,
    () => new URLSearchParams(window.location.hash.slice(1)).get("token"),
    () => undefined,
  );
}
