/** "Name: value" lines as a header object; a line without a colon is reported at the field. */
export function parseHeaderLines(text: string): { headers: Record<string, string>; error?: string } {
  const headers: Record<string, string> = {};
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return { headers, error: `line ${i + 1}: write a header as "Name: value"` };
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return { headers };
}

/** A header object as "Name: value" lines, for editing. */
export const headerLines = (headers: Record<string, string> | undefined) => Object.entries(headers ?? {}).map(([k, v]) => `${k}: ${v}`).join("\n");
