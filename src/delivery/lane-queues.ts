// What a destination lane (destination-lane.ts) holds that has not started, and the order
// it starts in. Pure, no timers: a FIFO queue per partition, the events whose turn came
// (`ready`: a parked event whose predecessor is done, a held retry now due, a request
// given back), per-user order (user-order.ts), and the one walk (`offer`: the next
// startable event, round robin) that starts single events and fills a batch alike.
import type { InboundRecord } from '../kafka/index.js';
import { partitionKey } from '../kafka/index.js';
import type { Entry, Head, PartitionQueue, Queued } from './lane-parts.js';
import { UserOrder } from './user-order.js';

export class LaneQueues {
  private readonly queues = new Map<string, PartitionQueue>();
  private queuedCount = 0;
  private cursor = 0;
  /** Events whose turn came, oldest first; they start before the queues' heads. */
  private ready: Entry[] = [];
  /** Ordered destinations: whose event is under way, and what waits behind it. */
  private readonly order = new UserOrder<Entry>();

  /** Records queued and not started (parked and ready ones not counted). */
  get queued(): number {
    return this.queuedCount;
  }

  get parked(): number {
    return this.order.parked;
  }

  values(): IterableIterator<PartitionQueue> {
    return this.queues.values();
  }

  /** The partition's queue, made when first asked for. */
  queueOf(topic: string, partition: number): PartitionQueue {
    const key = partitionKey(topic, partition);
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, items: [], head: 0, running: new Set(), parked: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }

  find(topic: string, partition: number): PartitionQueue | undefined {
    return this.queues.get(partitionKey(topic, partition));
  }

  /** Whether `queue` is still the lane's (its partition not revoked since). */
  holds(queue: PartitionQueue): boolean {
    return this.queues.get(partitionKey(queue.topic, queue.partition)) === queue;
  }

  push(queue: PartitionQueue, items: readonly Queued[]): void {
    for (const item of items) queue.items.push(item);
    this.queuedCount += items.length;
  }

  /** `item` is the queue's head again (a failed write's record: attempted again). */
  putBack(queue: PartitionQueue, item: Queued): void {
    queue.items.splice(queue.head, 0, item);
    this.queuedCount += 1;
  }

  /** The first event whose turn came, if any. */
  firstReady(): Entry | undefined {
    return this.ready[0];
  }

  /** The head `item` of `queue` (due) as an event that may start; 'parked': taken off to wait behind its user's earlier event (`ordered`). */
  headOf(queue: PartitionQueue, item: Queued, ordered: boolean): Head {
    if (!ordered) return { queue, item, user: '' };
    const entry: Entry = { queue, item, user: userOf(item.record) };
    if (this.order.mayStart(entry.user)) return entry;
    this.takeHead(queue);
    this.order.park(entry);
    queue.parked += 1;
    return 'parked';
  }

  /** `entry`, offered by `offer`, leaves where it waited (the events whose turn came, or its queue's head). */
  take(entry: Entry): void {
    if (this.ready[0] === entry) this.ready.shift();
    else this.takeHead(entry.queue);
  }

  /** `entry` starts (sent, paced, or in the open batch): running, and its user's later events wait. */
  started(entry: Entry): void {
    entry.queue.running.add(entry.item.record.offset);
    if (entry.user !== '') this.order.started(entry);
  }

  /** `entries` were not sent after all: not running, first in turn again. */
  givenBack(entries: readonly Entry[]): void {
    for (const { queue, item } of entries) queue.running.delete(item.record.offset);
    this.ready.unshift(...entries);
  }

  /** `entry`'s turn came (a held retry now due): it starts after those that wait already. */
  inTurn(entry: Entry): void {
    this.ready.push(entry);
  }

  /** Whether the user has an event under way (its next attempt then waits in the lane). */
  holdsUser(user: string): boolean {
    return this.order.holds(user);
  }

  /** The user's event is done (finished): their next parked one, if any, is in turn. */
  done(entry: Entry): void {
    if (entry.user === '') return;
    const next = this.order.done(entry.user);
    if (next === undefined) return;
    next.queue.parked -= 1;
    this.ready.push(next);
  }

  /**
   * The one walk: offers the next startable event to `take`, those in turn first, oldest
   * first, then the heads `headOf` gives, round robin (no partition starves another),
   * until `take` says false (that partition keeps its turn; `take` may have taken it, as
   * a request that waits for its tokens), `more` says stop (heads only), or none may start.
   * `take` takes off (`take()`) what it accepts.
   */
  offer(headOf: (queue: PartitionQueue) => Head, take: (entry: Entry) => boolean, more: () => boolean = () => true): void {
    while (this.ready.length > 0) {
      if (!take(this.ready[0]!)) return;
    }
    const queues = [...this.queues.values()];
    let idle = 0;
    while (idle < queues.length && this.queuedCount > 0 && more()) {
      const queue = queues[this.cursor++ % queues.length]!;
      const head = headOf(queue);
      if (head === 'parked') {
        idle = 0;
        continue;
      }
      if (head === undefined) {
        idle += 1;
        continue;
      }
      if (!take(head)) {
        this.cursor -= 1;
        return;
      }
      idle = 0;
    }
  }

  /** The partition went: its queue goes, with what it queued, parked or had in turn; what waited behind it is in turn. Returns whether any event was in turn before its own went out (the lane then pumps). */
  remove(queue: PartitionQueue): boolean {
    this.drop(queue);
    for (const entry of this.order.forget((event) => event.queue === queue)) {
      entry.queue.parked -= 1;
      if (entry.queue === queue) continue;
      // Parked (from another partition, a retry tier's) behind an event that went with the partition: in turn again.
      if (this.order.mayStart(entry.user)) {
        this.order.started(entry);
        this.ready.push(entry);
      } else {
        this.order.park(entry);
        entry.queue.parked += 1;
      }
    }
    const hadReady = this.ready.length > 0;
    this.ready = this.ready.filter((entry) => entry.queue !== queue);
    this.queues.delete(partitionKey(queue.topic, queue.partition));
    return hadReady;
  }

  /** The lane stops: nothing waits any more. */
  clear(): void {
    for (const queue of this.queues.values()) this.drop(queue);
    this.order.forget(() => true);
    this.ready = [];
  }

  private drop(queue: PartitionQueue): void {
    this.queuedCount -= queue.items.length - queue.head;
    queue.items = [];
    queue.head = 0;
  }

  private takeHead(queue: PartitionQueue): void {
    queue.head += 1;
    if (queue.head === queue.items.length) {
      queue.items = [];
      queue.head = 0;
    } else if (queue.head > 1024) {
      queue.items = queue.items.slice(queue.head);
      queue.head = 0;
    }
    this.queuedCount -= 1;
  }
}

/** The user of a record: its key (the userId, else the anonymousId); a record without one is a user of its own. */
function userOf(record: InboundRecord): string {
  return record.key === null ? `\u0000${record.topic}/${record.partition}@${record.offset}` : record.key.toString('latin1');
}
