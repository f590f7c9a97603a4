import http from "node:http";
import type { AddressInfo } from "node:net";

/** A span as an OTLP/HTTP JSON export carried it, flattened for assertions. */
export interface ReceivedSpan {
  service: string;
  name: string;
  /** OTLP span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? "";

const attributesOf = (list: OtlpAttribute[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

/**
 * A small OTLP/HTTP receiver for tests: accepts `POST /v1/traces` in the JSON encoding
 * (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every span; anything else is counted and answered 415.
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  let refused = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || !String(req.headers["content-type"]).startsWith("application/json")) {
        refused++;
        res.writeHead(415).end();
        return;
      }
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans?: {
            resource?: { attributes?: OtlpAttribute[] };
            scopeSpans?: {
              spans?: {
                name: string;
                kind: number;
                traceId: string;
                spanId: string;
                parentSpanId?: string;
                attributes?: OtlpAttribute[];
                links?: { traceId: string; spanId: string }[];
                status?: { code?: number };
              }[];
            }[];
          }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                name: s.name,
                kind: s.kind,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? "",
                attributes: attributesOf(s.attributes),
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                statusCode: s.status?.code ?? 0,
              });
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } catch {
        refused++;
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    /** Requests not understood (wrong path, not JSON). */
    refused: () => refused,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export type OtlpReceiver = Awaited<ReturnType<typeof startOtlpReceiver>>;
