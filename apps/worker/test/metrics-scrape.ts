/** A process's Prometheus exposition, fetched from its health port. */
export async function scrape(healthPort: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of an exposition (label values unescaped enough for the tests' ASCII values). */
export function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!.replace(/\\(.)/g, "$1");
    out.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return out;
}

/** The sum of the samples named exactly `name` whose labels include `labels` (0 when there are none). */
export function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number {
  return matching(text, name, labels).reduce((sum, s) => sum + s.value, 0);
}

/** The samples named exactly `name` whose labels include `labels`. */
export function matching(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return samples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** Every metric the exposition declares (`# TYPE name type`), with its type. */
export function declaredMetrics(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(name!, type!);
  return out;
}
