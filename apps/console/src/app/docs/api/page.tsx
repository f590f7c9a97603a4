import type { Metadata } from "next";
import { OpenApiReference } from "@/components/openapi-reference";
import { openApiDocument } from "@/server/openapi";

// The document is built from the zod contract at import time: render it once, at build time. Public: no session.
export const dynamic = "force-static";

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
