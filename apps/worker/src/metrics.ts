import { Counter, type Registry } from "prom-client";

export function createWorkerMetrics(registry: Registry) {
  return {
    discarded: new Counter({ name: "tick_messages_discarded_total", help: "Dispatch messages not executed, by reason (cancelled, stale, duplicate, ...)", labelNames: ["reason"], registers: [registry] }),
    completed: new Counter({ name: "tick_attempts_completed_total", help: "Attempts completed, by the job's resulting status", labelNames: ["status"], registers: [registry] }),
    lateCompletions: new Counter({ name: "tick_late_completions_total", help: "Completions refused because the lease had been taken over (duplicate signals)", registers: [registry] }),
    breakerOpened: new Counter({ name: "tick_breaker_opened_total", help: "Times a dependency's circuit breaker opened (dependency down)", labelNames: ["dependency"], registers: [registry] }),
    leaseLost: new Counter({ name: "tick_attempt_leases_lost_total", help: "Attempts abandoned because a lease renewal was refused or impossible", registers: [registry] }),
    sendsWithheld: new Counter({
      name: "tick_attempt_sends_withheld_total",
      help: "Attempts given up before their request was sent, because the lease was last renewed too long ago (a frozen or starved worker)",
      registers: [registry],
    }),
  };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;
