// How long a consumer group waits for a member that stopped heartbeating, for every
// consumer of the port.

/**
 * How long a consumer group waits for a member that stopped heartbeating before it
 * hands that member's partitions to the others.
 *
 * NOTE: kafkajs's default is 30 s, so after a SIGKILL (or an OOM kill) the router's or
 * a destination's partitions stalled for 30 s: the replacement cannot join until the
 * dead member's session expires (found by the chaos harness). 10 s with a heartbeat
 * every 3 s keeps that stall short and still rides out a couple of lost heartbeats
 * (the broker's floor, group.min.session.timeout.ms, is 6 s by default). The membership
 * heartbeats on a timer of its own, whatever the batches do (membership.ts).
 */
export const CONSUMER_SESSION_TIMEOUT_MS = 10_000;
export const CONSUMER_HEARTBEAT_INTERVAL_MS = 3_000;
