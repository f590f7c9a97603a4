import type { Metadata } from "next";
import { OpenApiReference } from "@/components/openapi-reference";
import { openApiDocument } from "@/server/openapi";

// The document is built from the zod contract at import time; the page still renders per request, as
// every console page does, so Next's scripts carry the request's CSP nonce (src/proxy.ts). Public: no session.
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: "API reference · Tick",
  description: "Every operation of the Tick HTTP API, its scope, parameters, bodies and problem types",
};

export default function ApiReferencePage() {
  return (
    <main className="mx-auto max-w-7xl p-6">
      <OpenApiReference document={openApiDocument} />
    </main>
  );
}
