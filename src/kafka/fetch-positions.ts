// The fetcher's bookkeeping (fetcher.ts), pure: each partition's position, epoch, held
// bytes, pause and request; the next request to a leader (fetch-plan.ts), and whether an
// answer still counts (the partition still here, with the epoch it was asked with). It
// keeps each leader's partitions split by whether they are at their end, and the budget's sums, as they
// change, so that planning walks only what it may ask for; fetch-plan.test.ts checks
// that against a full walk under random pauses, releases, rebalances and late answers.
import { planFetch } from './fetch-plan.js';
import type { FetchPlan, PlanInput, PlanPartition, PlanSettings } from './fetch-plan.js';

/** A partition's fetch state; `leader`, `held` and `hasRecords` change only through FetchPositions (they are indexed). */
export interface FetchPartition extends PlanPartition {
  position: bigint;
  /** Bumped by every seek and reset: answers asked before are fenced. */
  epoch: number;
  paused: boolean;
  inFlight: boolean;
  alone: boolean;
}

type Entry = FetchPartition & { leader: number; held: number; hasRecords: boolean | undefined };

/** One leader's partitions: those that may have records, and those at their end. */
interface LeaderPartitions {
  active: Set<Entry>;
  empty: Set<Entry>;
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
  private readonly partitions = new Map<string, Entry>();
  /** The most each leader's request out may bring (its maxBytes): part of the budget until answered. */
  private readonly inFlightBytes = new Map<number, number>();
  private readonly byLeader = new Map<number, LeaderPartitions>();
  /** The bytes every partition holds. */
  private heldBytes = 0;
  /** Partitions that hold or may have records (the fair share's divisor). */
  private sharing = 0;

  constructor(private readonly settings: PlanSettings) {}

  get(key: string): FetchPartition | undefined {
    return this.partitions.get(key);
  }

  values(): IterableIterator<FetchPartition> {
    return this.partitions.values();
  }

  /** Whether `leader` leads any of the partitions. */
  leads(leader: number): boolean {
    return this.byLeader.has(leader);
  }

  /** Whether a partition of `leader` is neither paused nor in a request. */
  anyAskable(leader: number): boolean {
    const mine = this.byLeader.get(leader);
    if (mine === undefined) return false;
    for (const set of [mine.active, mine.empty]) for (const p of set) if (!p.paused && !p.inFlight) return true;
    return false;
  }

  /** What planFetch reads for `leader`; the partitions at their end only when they ride along (`withEmpty`). */
  inputOf(leader: number, withEmpty: boolean): PlanInput {
    const mine = this.byLeader.get(leader);
    return { active: mine === undefined ? [] : [...mine.active], empty: mine === undefined || !withEmpty ? [] : [...mine.empty], sharing: this.sharing };
  }

  /** A new partition at `position`; false when it is here already (the caller seeks it). */
  add(key: string, topic: string, partition: number, position: bigint, held: number): boolean {
    if (this.partitions.has(key)) return false;
    const p: Entry = { key, topic, partition, position, epoch: 0, leader: -1, held, paused: false, inFlight: false, alone: false, hasRecords: undefined };
    this.partitions.set(key, p);
    this.index(p);
    return true;
  }

  remove(key: string): void {
    const p = this.partitions.get(key);
    if (p === undefined) return;
    this.unindex(p);
    this.partitions.delete(key);
  }

  clear(): void {
    this.partitions.clear();
    this.byLeader.clear();
    this.heldBytes = 0;
    this.sharing = 0;
  }

  /** The partition's leader is now `leader` (metadata). */
  setLeader(p: FetchPartition, leader: number): void {
    this.change(p, (e) => (e.leader = leader));
  }

  seek(p: FetchPartition, position: bigint): void {
    p.position = position;
    p.epoch += 1;
    p.inFlight = false;
    p.alone = false;
    this.change(p, (e) => (e.hasRecords = undefined));
  }

  release(p: FetchPartition, bytes: number): void {
    this.change(p, (e) => (e.held = Math.max(0, e.held - bytes)));
  }

  /** Bytes held by the owners plus what the requests out may bring. */
  outstanding(): number {
    let total = this.heldBytes;
    for (const bytes of this.inFlightBytes.values()) total += bytes;
    return total;
  }

  /** The next request to `leader` (planFetch), its partitions in flight; walked least recently asked first, so a short budget goes to the others next time. */
  send(leader: number, pollEmpty: boolean): SentRequest | undefined {
    const plan = planFetch(this.inputOf(leader, pollEmpty), this.settings, this.outstanding(), pollEmpty);
    if (plan === undefined) return undefined;
    this.inFlightBytes.set(leader, plan.maxBytes);
    const mine = this.byLeader.get(leader)!;
    const asked = plan.partitions.map((entry) => {
      const p = this.partitions.get(entry.key)!;
      p.inFlight = true;
      // Asked: behind those not asked, which the next plan walks first.
      if (mine.active.delete(p)) mine.active.add(p);
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
   * A counted answer of `p` asked at `from`, decoded up to `next`, the log ending at `end`;
   * `roomy`: the answer had room for its whole limit (else it was full before it). Returns
   * whether it was truncated, its first batch larger than its limit (asked for alone next).
   */
  answered(p: FetchPartition, from: bigint, next: bigint, end: bigint, held: number, roomy: boolean): boolean {
    p.alone = roomy && next === from && end > from;
    p.position = next;
    this.change(p, (e) => {
      e.hasRecords = end > next;
      e.held += held;
    });
    return p.alone;
  }

  /** The position was out of the log's range: it moves to `to`, and answers asked before are fenced. */
  reset(p: FetchPartition, to: bigint): void {
    p.position = to;
    p.epoch += 1;
  }

  /** Changes an indexed field of `p` (one still here; else just the field). A partition keeps its place in its set unless it moves. */
  private change(p: FetchPartition, edit: (e: Entry) => void): void {
    const e = p as Entry;
    if (this.partitions.get(e.key) !== e) {
      edit(e);
      return;
    }
    const { leader, held } = e;
    const wasEmpty = e.hasRecords === false;
    const shared = sharesBudget(e);
    edit(e);
    if (e.leader !== leader || (e.hasRecords === false) !== wasEmpty) {
      this.setOf(leader, wasEmpty).delete(e);
      const mine = this.byLeader.get(leader);
      if (mine !== undefined && mine.active.size === 0 && mine.empty.size === 0) this.byLeader.delete(leader);
      this.setOf(e.leader, e.hasRecords === false).add(e);
    }
    this.heldBytes += e.held - held;
    this.sharing += Number(sharesBudget(e)) - Number(shared);
  }

  private setOf(leader: number, empty: boolean): Set<Entry> {
    let mine = this.byLeader.get(leader);
    if (mine === undefined) this.byLeader.set(leader, (mine = { active: new Set(), empty: new Set() }));
    return empty ? mine.empty : mine.active;
  }

  private index(p: Entry): void {
    this.setOf(p.leader, p.hasRecords === false).add(p);
    this.heldBytes += p.held;
    if (sharesBudget(p)) this.sharing += 1;
  }

  private unindex(p: Entry): void {
    const mine = this.byLeader.get(p.leader);
    mine?.active.delete(p);
    mine?.empty.delete(p);
    if (mine !== undefined && mine.active.size === 0 && mine.empty.size === 0) this.byLeader.delete(p.leader);
    this.heldBytes -= p.held;
    if (sharesBudget(p)) this.sharing -= 1;
  }
}

/** A partition that holds or may have records takes a share of the budget (planFetch). */
function sharesBudget(p: FetchPartition): boolean {
  return p.held > 0 || p.hasRecords !== false;
}
