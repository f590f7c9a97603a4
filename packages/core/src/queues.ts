// The BullMQ queue names, defined once: the scheduler publishes to them and the worker consumes them,
// so the two must agree (a typo on one side is a queue nobody reads).

/** The queue the scheduler's outbox relay publishes attempts to and workers consume. */
export const ATTEMPT_QUEUE = "attempts";

/** The queue the scheduler's outbox relay publishes webhook deliveries to and workers deliver. */
export const WEBHOOK_QUEUE = "webhooks";
