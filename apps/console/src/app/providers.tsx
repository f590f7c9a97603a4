"use client";

import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { SessionProvider } from "next-auth/react";
import { useState, type ReactNode } from "react";
import { config as zodConfig } from "zod";

// In the browser zod must not compile validators with new Function: the console's CSP has no
// 'unsafe-eval' (src/proxy.ts), and even zod's probe for it is reported as a violation. The server keeps
// the compiled fast path.
if (typeof window !== "undefined") zodConfig({ jitless: true });

export function Providers({ children }: { children: ReactNode }) {
  const [client] = useState(() => new QueryClient({ defaultOptions: { queries: { staleTime: 2_000, retry: 1 } } }));
  return (
    <SessionProvider>
      <QueryClientProvider client={client}>{children}</QueryClientProvider>
    </SessionProvider>
  );
}
