// The per-user order check of a destination with `ordering: user`
// (docs/webhooks.md#per-user-order): no event of a user is delivered before an earlier
// one of the same user, counting the first delivery of each. "Earlier" is the order of
// the destination's topic (a user's records are in one partition), read at the end of
// the run; a record written twice (a router crash redoes its writes) counts at its
// first offset.
import { findTrails } from './trail.js';
import type { ChaosReceiver } from './receivers.js';

/** One delivered event: its user, where it first is in the destination's topic, and the place of its first delivery. */
export interface OrderedDelivery {
  key: string;
  user: string;
  partition: number;
  offset: bigint;
  seq: number;
}

export interface UserOrderResult {
  /** Delivered events checked (found in the topic, with a user). */
  checked: number;
  users: number;
  /** Events delivered before an earlier event of their user, at most 20 described. */
  violations: string[];
  violationCount: number;
}

const SHOWN = 20;

/** Pure: per user, in topic order, every event's first delivery must come after those of the events before it. */
export function orderViolations(deliveries: readonly OrderedDelivery[]): UserOrderResult {
  const byUser = new Map<string, OrderedDelivery[]>();
  for (const delivery of deliveries) {
    const list = byUser.get(delivery.user) ?? [];
    list.push(delivery);
    byUser.set(delivery.user, list);
  }
  const violations: string[] = [];
  let violationCount = 0;
  for (const [user, list] of byUser) {
    list.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
    let latest: OrderedDelivery | undefined;
    for (const delivery of list) {
      if (latest !== undefined && delivery.seq < latest.seq) {
        violationCount += 1;
        if (violations.length < SHOWN) {
          violations.push(`user ${user}: ${delivery.key} (partition ${delivery.partition} offset ${delivery.offset}) was delivered before ${latest.key} (offset ${latest.offset}), which is earlier in the topic`);
        }
      }
      if (latest === undefined || delivery.seq > latest.seq) latest = delivery;
    }
  }
  return { checked: deliveries.length, users: byUser.size, violations, violationCount };
}

/** Reads the destination's topic and checks the receiver's first deliveries against it. */
export async function checkUserOrder(
  brokers: string,
  topic: string,
  receiver: ChaosReceiver,
  keyOf: (messageId: string | undefined, traceId: string | undefined) => string,
): Promise<UserOrderResult> {
  const wanted = new Set([...receiver.firstDeliveries].filter(([, first]) => first.user !== undefined).map(([key]) => key));
  const trails = await findTrails(brokers, [topic], wanted, keyOf);
  const deliveries: OrderedDelivery[] = [];
  for (const [key, stops] of trails) {
    const first = receiver.firstDeliveries.get(key);
    const at = stops.reduce((min, stop) => (BigInt(stop.offset) < BigInt(min.offset) ? stop : min));
    if (first?.user === undefined) continue;
    deliveries.push({ key, user: first.user, partition: at.partition, offset: BigInt(at.offset), seq: first.seq });
  }
  return orderViolations(deliveries);
}
