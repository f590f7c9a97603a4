"use client";

import { useState } from "react";

/** A secret shown once: selectable, wrapped (never wider than the screen), with a copy button. */
export function CopySecret({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  return (
    <div className="flex flex-col gap-2 sm:flex-row sm:items-start">
      <code aria-label={label} data-testid="secret-value"
        className="block min-w-0 flex-1 break-all rounded-md border border-amber-300 bg-amber-50 px-3 py-2 font-mono text-xs">
        {value}
      </code>
      <button type="button"
        onClick={() => void navigator.clipboard.writeText(value).then(() => setCopied(true), () => setCopied(false))}
        className="rounded-md border border-slate-300 bg-white px-3 py-2 text-sm font-medium hover:bg-slate-50">
        {copied === true ? "Copied" : copied === false ? "Copy failed: select it" : "Copy"}
      </button>
    </div>
  );
}
