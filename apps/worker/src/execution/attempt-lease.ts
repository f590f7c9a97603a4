import type pg from "pg";
import { sql } from "@tick/db";
import type { Cancellation } from "./http-call.js";

/** The lease on one running attempt, as its runner sees it. */
interface AttemptLease extends Cancellation {
  lost: () => boolean;
  /** S7, narrowed: a reason not to send now (less than one heartbeat of lease left), or null. */
  mayStillSend: () => string | null;
  /** The attempt is done with its lease (before its completion is written). */
  release: () => void;
}

export interface LeaseKeeper {
  /** Starts keeping the lease granted by a statement sent at `grantedAt` (performance.now()). */
  hold(attemptId: string, grantedAt: number): AttemptLease;
  stop(): void;
}

interface Held {
  deadline: number;
  /** Why the lease was lost, once it is. */
  lostReason: string | null;
  /** Told once when the lease is lost (the call in flight, to abort it). */
  onLost: ((reason: string) => void) | null;
}

/**
 * The worker's attempt heartbeat: one renewal statement per beat for all of its running attempts
 * (sql.renewAttemptLeases), each row renewed only while it still holds its lease. Lease deadlines are
 * kept on the monotonic clock, measured from when each granting statement was sent (it runs on while the
 * process is stopped, so a worker frozen past its lease sees that the moment it resumes). An attempt's
 * first renewal comes within one interval of its start, never later than with a timer of its own.
 */
export function createLeaseKeeper(options: { pool: pg.Pool; leaseMs: number; heartbeatMs: number }): LeaseKeeper {
  const { pool, leaseMs, heartbeatMs } = options;
  const held = new Map<string, Held>();
  // A plain flag and one callback rather than an AbortController per attempt: the call in flight builds
  // the only controller it needs (an AbortSignal costs tens of microseconds per attempt).
  const lose = (h: Held, reason: string) => {
    if (h.lostReason !== null) return;
    h.lostReason = reason;
    h.onLost?.(reason);
  };

  const beat = () => {
    const ids = [...held.keys()];
    if (ids.length === 0) return;
    const sentAt = performance.now();
    sql
      .renewAttemptLeases(pool, ids, leaseMs)
      .then(({ renewed, busy }) => {
        for (const id of ids) {
          const h = held.get(id);
          if (!h) continue; // released meanwhile (its completion may be what refused the renewal)
          if (renewed.has(id)) h.deadline = Math.max(h.deadline, sentAt + leaseMs);
          // Locked by another statement: not renewed this beat, not lost either; the next beat tries again.
          else if (!busy.has(id)) lose(h, "lease lost");
          else if (performance.now() > h.deadline) lose(h, "lease expired while its row was locked");
        }
      })
      .catch(() => {
        for (const id of ids) {
          const h = held.get(id);
          if (h && performance.now() > h.deadline) lose(h, "lease expired while the database was unreachable");
        }
      });
  };
  const timer = setInterval(beat, heartbeatMs);
  timer.unref();

  return {
    hold(attemptId, grantedAt) {
      const h: Held = { deadline: grantedAt + leaseMs, lostReason: null, onLost: null };
      held.set(attemptId, h);
      return {
        get cancelled() {
          return h.lostReason;
        },
        onCancel: (listener) => {
          h.onLost = listener;
        },
        lost: () => h.lostReason !== null,
        mayStillSend: () => {
          const left = h.deadline - performance.now();
          return left < heartbeatMs
            ? `the lease was last renewed ${Math.round(performance.now() - (h.deadline - leaseMs))} ms ago; it may have been taken over`
            : null;
        },
        release: () => {
          if (held.get(attemptId) === h) held.delete(attemptId);
        },
      };
    },
    stop: () => clearInterval(timer),
  };
}
