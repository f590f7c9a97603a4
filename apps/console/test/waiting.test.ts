// The waiting reason's rule (decideWaiting), one fact at a time, in the order the claim applies them.
import { describe, expect, it } from "vitest";
import type { sql } from "@tick/db";
import { decideWaiting } from "../src/server/services/waiting";

const now = new Date("2026-12-05T12:00:00.400Z");
const due: sql.WaitingFacts = {
  status: "scheduled",
  due_in_ms: -1_000,
  now,
  tenant_suspended: false,
  tenant_in_flight: 0,
  tenant_max_in_flight: 100,
  queue_paused: false,
  queue_concurrency: null,
  queue_in_flight: 0,
  queue_rate_per_second: null,
  queue_window_used: 0,
  dependency_key: "api.example.com",
  dependency_paused: false,
  flow_key: "acme",
  key_paused: false,
  key_cap: null,
  key_in_flight: 0,
  key_in_flight_job_ids: [],
  key_rate_limit: null,
  key_rate_period_ms: null,
  key_tokens: null,
  ahead: 0,
};
const code = (over: Partial<sql.WaitingFacts>, breaker: { state: string; openUntil: number | null } | null = null) => decideWaiting({ ...due, ...over }, breaker)?.code ?? null;

describe("why a job waits", () => {
  it("names nothing for a job that runs or ended, and the worker for a dispatched one", () => {
    expect(code({ status: "running" })).toBeNull();
    expect(code({ status: "succeeded" })).toBeNull();
    expect(code({ status: "dispatched" })).toBe("awaiting_worker");
  });

  it("a job not due yet says until when", () => {
    expect(decideWaiting({ ...due, due_in_ms: 5_000 }, null)).toEqual({ code: "not_due", message: "Not due yet.", until: "2026-12-05T12:00:05.400Z" });
  });

  it("checks what holds the tenant, the queue, the key and the dependency before the caps, and the caps before the rates", () => {
    const everything: Partial<sql.WaitingFacts> = {
      tenant_suspended: true,
      queue_paused: true,
      key_paused: true,
      dependency_paused: true,
      tenant_in_flight: 100,
      queue_concurrency: 5,
      queue_in_flight: 5,
      key_cap: 2,
      key_in_flight: 2,
      key_rate_limit: 1,
      key_rate_period_ms: 1_000,
      key_tokens: 0.5,
      queue_rate_per_second: 1,
      queue_window_used: 1,
      ahead: 3,
    };
    const order = ["tenant_suspended", "queue_paused", "key_paused", "dependency_paused", "breaker_open", "tenant_at_cap", "queue_at_cap", "key_at_cap", "key_over_rate", "queue_over_rate", "fair_share", "dispatching"];
    const off: Record<string, Partial<sql.WaitingFacts>> = {
      tenant_suspended: { tenant_suspended: false },
      queue_paused: { queue_paused: false },
      key_paused: { key_paused: false },
      dependency_paused: { dependency_paused: false },
      tenant_at_cap: { tenant_in_flight: 0 },
      queue_at_cap: { queue_in_flight: 0 },
      key_at_cap: { key_in_flight: 1 },
      key_over_rate: { key_tokens: 1.2 },
      queue_over_rate: { queue_window_used: 0 },
      fair_share: { ahead: 0 },
    };
    let facts = { ...everything };
    let breaker: { state: string; openUntil: number | null } | null = { state: "open", openUntil: now.getTime() + 30_000 };
    for (const expected of order) {
      expect(code(facts, breaker)).toBe(expected);
      if (expected === "breaker_open") breaker = { state: "closed", openUntil: null };
      else facts = { ...facts, ...off[expected] };
    }
  });

  it("a key at its cap says how many of how many, with the jobs in flight", () => {
    const w = decideWaiting({ ...due, key_cap: 2, key_in_flight: 2, key_in_flight_job_ids: ["a", "b"] }, null);
    expect(w).toEqual({ code: "key_at_cap", message: 'Its flow key "acme" is at its concurrency (2 of 2 in flight).', inFlight: 2, cap: 2, inFlightJobIds: ["a", "b"] });
  });

  it("a key over its rate says when the next token comes; a key without a bucket yet has a full one", () => {
    const w = decideWaiting({ ...due, key_rate_limit: 5, key_rate_period_ms: 1_000, key_tokens: 0.5 }, null);
    expect(w?.code).toBe("key_over_rate");
    expect(w?.nextTokenAt).toBe("2026-12-05T12:00:00.500Z");
    expect(code({ key_rate_limit: 5, key_rate_period_ms: 1_000, key_tokens: null })).toBe("dispatching");
  });

  it("a fractional queue rate allows floor(r(s+1)) - floor(rs) in second s", () => {
    // 0.5/s: 2026-12-05T12:00:00Z is an even second, which takes nothing; the next one takes one.
    expect(code({ queue_rate_per_second: 0.5, queue_window_used: 0 })).toBe("queue_over_rate");
    expect(code({ queue_rate_per_second: 0.5, queue_window_used: 0, now: new Date("2026-12-05T12:00:01.400Z") })).toBe("dispatching");
  });

  it("a job without a key is never held by key facts", () => {
    expect(code({ flow_key: null, key_paused: true, key_cap: 1, key_in_flight: 5 })).toBe("dispatching");
  });
});
