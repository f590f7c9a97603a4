/** A process's Prometheus exposition, fetched from its health port. */
export async function scrape(healthPort: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
}
