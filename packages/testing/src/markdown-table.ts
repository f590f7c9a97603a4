/** A Markdown table with padded columns, as the test and bench reports print them. */
export function markdownTable(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = rows.map((r) => r.map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const fmt = (r: readonly string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [fmt(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(fmt)].join("\n");
}
