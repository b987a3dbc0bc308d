// The consumer engine's membership (docs/kafka.md#the-consumer-engine): one member of a
// consumer group, eager rebalance protocol: find the coordinator, join, sync, heartbeat,
// leave, a generation per assignment. The member gives its partitions up before every
// new join (`revoking`: the owner commits what finished while the generation still
// holds). Its leader spreads each topic's partitions over the members that read it.
import { decodeConsumerProtocolAssignment, decodeConsumerProtocolSubscription, encodeConsumerProtocolAssignment, encodeConsumerProtocolSubscription } from '@platformatic/kafka';
import type { Logger } from 'pino';
import { ERROR, KafkaAnswerError } from './wire.js';
import type { Wire } from './wire.js';

/** One assignment of the group to this member. */
export interface Generation {
  readonly id: number;
  readonly memberId: string;
  /** The coordinator's node id (where commits go). */
  readonly coordinator: number;
  /** Partitions per topic, of the topics this member subscribes to. */
  readonly assignment: ReadonlyMap<string, readonly number[]>;
  /** Topics the assignment held that this member does not read (a group id shared with another deployment). */
  readonly foreignTopics: readonly string[];
}

export interface MembershipSettings {
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  heartbeatIntervalMs: number;
}

export interface MembershipEvents {
  /** A new assignment (after each join). */
  assigned(generation: Generation): void;
  /** The member is giving up `generation` (a rebalance, new topics, leaving): the owner stops fetching and commits what finished; the next join waits for it. */
  revoking(generation: Generation): Promise<void>;
  /** A join or heartbeat failed; the member tries again in `retryInMs`. */
  trouble?(error: Error, retryInMs: number): void;
}

/** Both round-robin names of the port's earlier clients (kafkajs's, @platformatic/kafka's): old and new members form one group during a rolling upgrade. */
const PROTOCOLS = ['roundrobin', 'RoundRobinAssigner'] as const;

/** The backoff of a failed join: 200 ms doubling up to 1 s (as the port's requests: platformatic-client.ts). */
const backoff = (attempt: number): number => Math.min(1_000, 200 * 2 ** Math.min(attempt, 3));

/**
 * The leader's assignment: every partition of each topic to one of the members that
 * subscribe to it, round-robin over the members in a stable order, topics in name
 * order, so that members spread evenly whatever their subscriptions. Pure.
 */
export function assignPartitions(subscriptions: ReadonlyMap<string, readonly string[]>, partitionCounts: ReadonlyMap<string, number>): Map<string, Map<string, number[]>> {
  const result = new Map<string, Map<string, number[]>>();
  const members = [...subscriptions.keys()].sort();
  for (const member of members) result.set(member, new Map());
  const readersOf = new Map<string, string[]>();
  for (const member of members) for (const topic of subscriptions.get(member)!) readersOf.set(topic, [...(readersOf.get(topic) ?? []), member]);
  let turn = 0;
  for (const topic of [...readersOf.keys()].sort()) {
    const readers = readersOf.get(topic)!;
    const count = partitionCounts.get(topic) ?? 0;
    for (let partition = 0; partition < count; partition++) {
      const member = readers[turn % readers.length]!;
      turn += 1;
      const topics = result.get(member)!;
      topics.set(topic, [...(topics.get(topic) ?? []), partition]);
    }
  }
  return result;
}

export class GroupMembership {
  private topics: readonly string[] = [];
  private memberId = '';
  private generation: Generation | undefined;
  private coordinator: number | undefined;
  private running = false;
  private loop: Promise<void> | undefined;
  /** Set to end the current generation at the next beat (new topics). */
  private rejoinAsked = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly wire: Wire,
    private readonly settings: MembershipSettings,
    private readonly events: MembershipEvents,
    private readonly logger: Logger,
  ) {}

  /** The assignment in force; undefined between generations. */
  current(): Generation | undefined {
    return this.generation;
  }

  /** Joins on `topics` (again, should it run already); the joins run in the background. */
  subscribe(topics: readonly string[]): void {
    this.topics = [...topics];
    if (this.running) {
      this.rejoinAsked = true;
      this.wake?.();
      return;
    }
    this.running = true;
    this.loop = this.run();
  }

  /** A commit found the generation gone (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID): join again now. */
  rejoin(): void {
    if (!this.running) return;
    this.rejoinAsked = true;
    this.wake?.();
  }

  /** Gives up the assignment (the owner commits first: `revoking`) and leaves the group. */
  async leave(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake?.();
    await this.loop;
    const { coordinator, memberId } = this;
    if (coordinator !== undefined && memberId !== '') {
      await this.wire.leaveGroup(coordinator, this.settings.groupId, memberId).catch((error: unknown) => {
        this.logger.debug({ err: error, groupId: this.settings.groupId }, 'leaving the group failed; the session expires instead');
      });
    }
    this.memberId = '';
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (this.running) {
      try {
        const joined = await this.joinOnce();
        attempt = 0;
        if (joined) await this.beat();
      } catch (error) {
        const wait = backoff(attempt++);
        this.coordinator = undefined;
        this.events.trouble?.(error as Error, wait);
        await this.sleep(wait);
      } finally {
        await this.endGeneration();
      }
    }
  }

  private async endGeneration(): Promise<void> {
    const generation = this.generation;
    if (generation === undefined) return;
    // NOTE: still current while the owner commits: commits of this generation are
    // accepted until the group completes the next join.
    try {
      await this.events.revoking(generation);
    } finally {
      this.generation = undefined;
    }
  }

  /** One join and sync; false when the broker asks for another right away. */
  private async joinOnce(): Promise<boolean> {
    const { groupId, sessionTimeoutMs, rebalanceTimeoutMs } = this.settings;
    const coordinator = await this.findCoordinator();
    this.rejoinAsked = false;
    const topics = this.topics;
    const subscription = { version: 0, topics: [...topics] };
    const protocols = PROTOCOLS.map((name) => ({ name, metadata: encodeConsumerProtocolSubscription(subscription) }));
    const join = await this.wire.joinGroup(coordinator, groupId, sessionTimeoutMs, rebalanceTimeoutMs, this.memberId, protocols);
    if (join.errorCode === ERROR.MEMBER_ID_REQUIRED) {
      this.memberId = join.memberId;
      return false;
    }
    if (this.retryJoin(join.errorCode, 'joining')) return false;
    this.memberId = join.memberId;
    const isLeader = join.leader === join.memberId;
    const assignments = isLeader ? await this.assign(join.members.map((m) => ({ memberId: m.memberId, metadata: m.metadata }))) : [];
    const sync = await this.wire.syncGroup(coordinator, groupId, join.generationId, this.memberId, assignments);
    if (this.retryJoin(sync.errorCode, 'syncing')) return false;
    const decoded = sync.assignment.length === 0 ? [] : decodeConsumerProtocolAssignment(sync.assignment).assignedPartitions;
    const ours = new Set(topics);
    const assignment = new Map<string, number[]>();
    const foreignTopics: string[] = [];
    for (const { topic, partitions } of decoded) {
      if (ours.has(topic)) assignment.set(topic, [...partitions].sort((a, b) => a - b));
      else if (partitions.length > 0) foreignTopics.push(topic);
    }
    this.generation = { id: join.generationId, memberId: this.memberId, coordinator, assignment, foreignTopics };
    this.events.assigned(this.generation);
    return true;
  }

  /** Whether a join's or sync's error code calls for another join at once (false: no error); any other code is thrown (the loop waits, then joins). */
  private retryJoin(errorCode: number, what: string): boolean {
    switch (errorCode) {
      case ERROR.NONE:
        return false;
      case ERROR.REBALANCE_IN_PROGRESS:
      case ERROR.ILLEGAL_GENERATION:
        return true;
      case ERROR.UNKNOWN_MEMBER_ID:
      case ERROR.FENCED_INSTANCE_ID:
        this.memberId = '';
        return true;
      case ERROR.NOT_COORDINATOR:
      case ERROR.COORDINATOR_NOT_AVAILABLE:
      case ERROR.COORDINATOR_LOAD_IN_PROGRESS:
        this.coordinator = undefined;
    }
    throw new KafkaAnswerError(errorCode, `${what} consumer group ${this.settings.groupId}`);
  }

  private async findCoordinator(): Promise<number> {
    if (this.coordinator !== undefined) return this.coordinator;
    this.coordinator = await this.wire.coordinator(this.settings.groupId, `consumer group ${this.settings.groupId}`);
    return this.coordinator;
  }

  /** The leader's assignment of every member's subscription, encoded for the sync. */
  private async assign(members: { memberId: string; metadata: Buffer }[]): Promise<{ memberId: string; assignment: Buffer }[]> {
    const subscriptions = new Map<string, readonly string[]>();
    for (const m of members) subscriptions.set(m.memberId, decodeConsumerProtocolSubscription(m.metadata).topics);
    const wanted = [...new Set([...subscriptions.values()].flat())];
    const counts = new Map<string, number>();
    // NOTE: a topic just made may be missing from the metadata for a moment: asked again
    // (up to about 2 s), since an assignment without its partitions and the next with them
    // moved them away and back, and records in flight were delivered again.
    for (let attempt = 0; wanted.length > 0; attempt++) {
      const metadata = await this.wire.metadata(wanted);
      let missing = 0;
      for (const topic of wanted) {
        const found = metadata.topics.get(topic);
        const count = found === undefined || found.errorCode !== ERROR.NONE ? 0 : found.partitions.length;
        if (count === 0) missing += 1;
        counts.set(topic, count);
      }
      if (missing === 0 || attempt >= 10) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const plan = assignPartitions(subscriptions, counts);
    return [...plan].map(([memberId, topics]) => ({
      memberId,
      assignment: encodeConsumerProtocolAssignment({ version: 0, assignedPartitions: [...topics].map(([topic, partitions]) => ({ topic, partitions })) }),
    }));
  }

  /** Heartbeats until the generation ends: a rebalance, a lost membership, new topics, leave(), or no answer for a whole session. */
  private async beat(): Promise<void> {
    const { groupId, heartbeatIntervalMs, sessionTimeoutMs } = this.settings;
    let lastAnswer = Date.now();
    while (this.running && !this.rejoinAsked) {
      await this.sleep(heartbeatIntervalMs);
      if (!this.running || this.rejoinAsked) return;
      const generation = this.generation!;
      let code: number;
      try {
        code = await this.wire.heartbeat(generation.coordinator, groupId, generation.id, generation.memberId);
      } catch (error) {
        if (Date.now() - lastAnswer > sessionTimeoutMs) throw error;
        this.logger.debug({ err: error, groupId }, 'heartbeat not answered; trying again');
        continue;
      }
      lastAnswer = Date.now();
      if (code === ERROR.NONE) continue;
      if (code === ERROR.REBALANCE_IN_PROGRESS) return;
      if (code === ERROR.UNKNOWN_MEMBER_ID || code === ERROR.FENCED_INSTANCE_ID) {
        this.memberId = '';
        return;
      }
      if (code === ERROR.ILLEGAL_GENERATION) return;
      if (code === ERROR.NOT_COORDINATOR || code === ERROR.COORDINATOR_NOT_AVAILABLE) this.coordinator = undefined;
      throw new KafkaAnswerError(code, `heartbeat of consumer group ${groupId}`);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
