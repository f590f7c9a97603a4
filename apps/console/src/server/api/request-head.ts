/**
 * What the API pipeline reads of a request. A Web Request has it; so has the API's direct Node path
 * (direct-api.ts), which serves the hottest route without building one.
 */
export interface RequestHead {
  method: string;
  /** Absolute, or the path with its query. */
  url: string;
  headers: { get(name: string): string | null };
}
