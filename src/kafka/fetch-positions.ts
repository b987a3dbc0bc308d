// The fetcher's bookkeeping (fetcher.ts), pure: each partition's position and epoch,
// the bytes its owner holds, whether it is paused or in a request; which request goes
// to a leader next (fetch-plan.ts), and whether an answer still counts. An answer
// counts only for a partition still here with the epoch it was asked with: a partition
// assigned anew, sought or removed since moves by nothing that was asked before.
// test/unit/kafka/fetch-plan.test.ts drives it with random pauses, releases,
// rebalances and late answers.
import { planFetch } from './fetch-plan.js';
import type { FetchPlan, PlanPartition, PlanSettings } from './fetch-plan.js';

export interface FetchPartition extends PlanPartition {
  position: bigint;
  /** Bumped by every seek and reset: answers asked before are fenced. */
  epoch: number;
  leader: number;
  held: number;
  paused: boolean;
  inFlight: boolean;
  alone: boolean;
  hasRecords: boolean | undefined;
}

/** A partition as a request sent asked for it. */
export interface AskedPartition {
  readonly partition: FetchPartition;
  readonly epoch: number;
  readonly position: bigint;
  readonly maxBytes: number;
}

export interface SentRequest {
  readonly plan: FetchPlan;
  readonly asked: readonly AskedPartition[];
}

export class FetchPositions {
  private readonly partitions = new Map<string, FetchPartition>();
  /** The most each leader's request out may bring (its maxBytes): part of the budget until answered. */
  private readonly inFlightBytes = new Map<number, number>();

  constructor(private readonly settings: PlanSettings) {}

  get(key: string): FetchPartition | undefined {
    return this.partitions.get(key);
  }

  values(): IterableIterator<FetchPartition> {
    return this.partitions.values();
  }

  get size(): number {
    return this.partitions.size;
  }

  /** A new partition at `position`; false when it is here already (the caller seeks it). */
  add(key: string, topic: string, partition: number, position: bigint, held: number): boolean {
    if (this.partitions.has(key)) return false;
    this.partitions.set(key, { key, topic, partition, position, epoch: 0, leader: -1, held, paused: false, inFlight: false, alone: false, hasRecords: undefined });
    return true;
  }

  remove(key: string): void {
    this.partitions.delete(key);
  }

  clear(): void {
    this.partitions.clear();
  }

  seek(p: FetchPartition, position: bigint): void {
    p.position = position;
    p.epoch += 1;
    p.inFlight = false;
    p.alone = false;
    p.hasRecords = undefined;
  }

  release(p: FetchPartition, bytes: number): void {
    p.held = Math.max(0, p.held - bytes);
  }

  /** Bytes held by the owners plus what the requests out may bring. */
  outstanding(): number {
    let total = 0;
    for (const p of this.partitions.values()) total += p.held;
    for (const bytes of this.inFlightBytes.values()) total += bytes;
    return total;
  }

  /** The next request to `leader` (planFetch), its partitions marked in flight; undefined when none may be asked for now. */
  send(leader: number, rotation: number, pollEmpty: boolean): SentRequest | undefined {
    const plan = planFetch([...this.partitions.values()], leader, this.settings, this.outstanding(), rotation, pollEmpty);
    if (plan === undefined) return undefined;
    this.inFlightBytes.set(leader, plan.maxBytes);
    const asked = plan.partitions.map((entry) => {
      const p = this.partitions.get(entry.key)!;
      p.inFlight = true;
      return { partition: p, epoch: p.epoch, position: p.position, maxBytes: entry.maxBytes };
    });
    return { plan, asked };
  }

  /** The leader's request was answered or failed: its bytes leave the budget (what the answer brought is held now). */
  settled(leader: number): void {
    this.inFlightBytes.delete(leader);
  }

  /** Whether an answer for `asked` still counts (not fenced); it is no longer in flight then. */
  current(asked: AskedPartition): boolean {
    const p = asked.partition;
    if (this.partitions.get(p.key) !== p || p.epoch !== asked.epoch) return false;
    p.inFlight = false;
    return true;
  }

  /** The request failed: its partitions may be asked for again. */
  failed(asked: readonly AskedPartition[]): void {
    for (const { partition, epoch } of asked) if (partition.epoch === epoch) partition.inFlight = false;
  }

  /**
   * A counted answer of `p` asked at `from`: decoded up to `next`, `held` bytes handed
   * over, the log ending at `end`. Returns whether it was truncated (nothing came although
   * the log holds more: a batch larger than the partition's limit; asked for alone next).
   */
  answered(p: FetchPartition, from: bigint, next: bigint, end: bigint, held: number): boolean {
    p.alone = next === from && end > from;
    p.position = next;
    p.hasRecords = end > next;
    p.held += held;
    return p.alone;
  }

  /** The position was out of the log's range: it moves to `to`, and answers asked before are fenced. */
  reset(p: FetchPartition, to: bigint): void {
    p.position = to;
    p.epoch += 1;
  }
}
