// The messageIds each destination took lately, for skipping a copy of an event it already
// has (docs/webhooks.md#duplicates): a record written again after a router or gateway
// crash, a client's retry of a call whose answer it never saw, a record read again by a
// lane restarted on a config reload. Bounded: the newest `capacity` deliveries of the
// process over all destinations (the oldest goes first); a restart forgets them all, so
// this narrows at-least-once, it does not make it exactly-once.

/** Deliveries remembered at most, over every destination of a deliverer: about 100 bytes each. */
export const DELIVERED_IDS_CAPACITY = 100_000;

/** One destination's view (what a lane uses). */
export interface DestinationDeliveredIds {
  /** Whether the destination took an event with this messageId lately. */
  has(messageId: string): boolean;
  /** The destination took it (a 2xx from one of its URLs). */
  add(messageId: string): void;
}

export class DeliveredIds {
  /** `destination NUL messageId`, oldest first (a Map keeps insertion order). */
  private readonly ids = new Map<string, true>();

  constructor(private readonly capacity = DELIVERED_IDS_CAPACITY) {}

  has(destination: string, messageId: string): boolean {
    return this.ids.has(`${destination}\u0000${messageId}`);
  }

  add(destination: string, messageId: string): void {
    const key = `${destination}\u0000${messageId}`;
    this.ids.delete(key); // taken again: it is the newest now
    this.ids.set(key, true);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.keys().next().value!);
  }

  /** Remembered now, over all destinations. */
  get size(): number {
    return this.ids.size;
  }

  of(destination: string): DestinationDeliveredIds {
    return { has: (messageId) => this.has(destination, messageId), add: (messageId) => this.add(destination, messageId) };
  }
}
