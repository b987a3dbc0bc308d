// The one file that speaks Kafka's protocol itself, through @platformatic/kafka's
// exported API functions, each at one fixed version every broker since Kafka 2.7 answers
// (test/integration/wire-contract.test.ts holds them to the pinned version). An error
// code inside an answer is returned with it, never thrown: the caller decides.
import {
  ConnectionPool,
  ResponseError,
  addOffsetsToTxnV3,
  fetchV12,
  findCoordinatorV3,
  heartbeatV4,
  joinGroupV6,
  leaveGroupV4,
  listOffsetsV6,
  metadataV9,
  offsetCommitV8,
  offsetFetchV7,
  protocolErrors,
  protocolErrorsCodesById,
  syncGroupV4,
  txnOffsetCommitV3,
} from '@platformatic/kafka';
import type { Connection } from '@platformatic/kafka';
import type { KafkaSettings } from './client.js';
import { platformaticOptions } from './platformatic-client.js';

export type FetchAnswer = fetchV12.FetchResponse;
export type FetchAnswerPartition = fetchV12.FetchResponsePartition;
export type JoinAnswer = joinGroupV6.JoinGroupResponse;
export type OffsetFetchAnswer = offsetFetchV7.OffsetFetchResponse;
export type OffsetCommitAnswer = offsetCommitV8.OffsetCommitResponse;
export type ListOffsetsAnswer = listOffsetsV6.ListOffsetsResponse;
export type TxnOffsetCommitAnswer = txnOffsetCommitV3.TxnOffsetCommitResponse;

/** Kafka's error codes the engine acts on, by name (the protocol's own names). */
export const ERROR = {
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  NOT_LEADER_OR_FOLLOWER: 6,
  COORDINATOR_LOAD_IN_PROGRESS: 14,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  UNKNOWN_MEMBER_ID: 25,
  REBALANCE_IN_PROGRESS: 27,
  GROUP_AUTHORIZATION_FAILED: 30,
  TOPIC_ALREADY_EXISTS: 36,
  NOT_ENOUGH_REPLICAS: 19,
  INVALID_PRODUCER_EPOCH: 47,
  INVALID_TXN_STATE: 48,
  CONCURRENT_TRANSACTIONS: 51,
  FETCH_SESSION_ID_NOT_FOUND: 70,
  INVALID_FETCH_SESSION_EPOCH: 71,
  FENCED_LEADER_EPOCH: 74,
  UNKNOWN_LEADER_EPOCH: 75,
  MEMBER_ID_REQUIRED: 79,
  GROUP_MAX_SIZE_REACHED: 81,
  FENCED_INSTANCE_ID: 82,
  OFFSET_NOT_AVAILABLE: 78,
  UNSTABLE_OFFSET_COMMIT: 88,
  PRODUCER_FENCED: 90,
} as const;

/** FindCoordinator's key types: a consumer group's coordinator, a transactional id's. */
export const COORDINATOR_OF = { group: 0, transaction: 1 } as const;

/** The protocol's name of an error code (`NOT_COORDINATOR`), for messages. */
export function errorName(code: number): string {
  const name = (protocolErrorsCodesById as Record<number, string | undefined>)[code];
  return name ?? `error code ${code}`;
}

/** Whether the protocol says another try of a request answered with `code` may succeed (NOT_COORDINATOR, a leader moving). */
export function isRetriableCode(code: number): boolean {
  const known = (protocolErrors as Record<string, { canRetry?: boolean } | undefined>)[errorName(code)];
  return known?.canRetry === true;
}

/** An error answer as an Error: `type` the protocol's name (isGroupInUse), `canRetry` its word on another try (isRetriable). */
export class KafkaAnswerError extends Error {
  readonly type: string;
  readonly canRetry: boolean;
  constructor(
    readonly code: number,
    what: string,
  ) {
    super(`${what}: the broker answered ${errorName(code)}`);
    this.name = 'KafkaAnswerError';
    this.type = errorName(code);
    this.canRetry = isRetriableCode(code);
  }
}


export interface BrokerAddress {
  nodeId: number;
  host: string;
  port: number;
}

export interface PartitionLeader {
  partition: number;
  leader: number;
  leaderEpoch: number;
  errorCode: number;
}

export interface TopicMetadata {
  name: string;
  errorCode: number;
  partitions: PartitionLeader[];
}

export interface ClusterMetadata {
  brokers: Map<number, BrokerAddress>;
  topics: Map<string, TopicMetadata>;
}

export interface FetchPartitionAsk {
  partition: number;
  offset: bigint;
  maxBytes: number;
}

export interface FetchAsk {
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  /** 0: read uncommitted; 1: read committed (records of open or aborted transactions held back). */
  isolation: 0 | 1;
  topics: { topic: string; partitions: FetchPartitionAsk[] }[];
  /** A step of an incremental fetch session (fetch-session.ts); without it, a request of its own that names every partition. */
  session?: { id: number; epoch: number; forgotten: readonly { topic: string; partitions: number[] }[] };
}

export interface OffsetToCommit {
  partition: number;
  offset: bigint;
  metadata: string | null;
}

/** The answer a ResponseError carries (the request's whole answer, its error codes inside). */
function answerOf<T>(error: unknown): T | undefined {
  if (!(error instanceof ResponseError)) return undefined;
  return (error as unknown as { response?: T }).response;
}

async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    const answer = answerOf<T>(error);
    if (answer !== undefined) return answer;
    throw error;
  }
}

/**
 * The connections of one engine client. NOTE: fetches go on connections of their own:
 * a broker answers one connection's requests in order, so a commit or heartbeat behind
 * a fetch waiting for records waited as long, and a deliverer killed then redid more than
 * its requests in flight (test/integration/deliver-flaky-kill.test.ts).
 */
export class Wire {
  private readonly pool: ConnectionPool;
  private readonly fetchPool: ConnectionPool;
  private readonly bootstrap: { host: string; port: number }[];
  private brokers = new Map<number, BrokerAddress>();

  constructor(settings: KafkaSettings, clientId: string, requestTimeoutMs = 30_000) {
    const options = platformaticOptions(settings, clientId, requestTimeoutMs);
    const connection = {
      connectTimeout: options.connectTimeout,
      requestTimeout: requestTimeoutMs,
      maxInflights: 5,
      ...(options.tls === undefined ? {} : { tls: options.tls }),
      ...(options.sasl === undefined ? {} : { sasl: options.sasl }),
    };
    this.pool = new ConnectionPool(clientId, connection);
    this.fetchPool = new ConnectionPool(clientId, connection);
    this.bootstrap = settings.brokers.map(parseBroker);
  }

  private async any(): Promise<Connection> {
    return this.pool.getFirstAvailable(this.bootstrap);
  }

  private async node(nodeId: number, pool = this.pool): Promise<Connection> {
    let broker = this.brokers.get(nodeId);
    if (broker === undefined) {
      await this.metadata([]);
      broker = this.brokers.get(nodeId);
    }
    if (broker === undefined) throw new Error(`Kafka broker ${nodeId} is not in the cluster's metadata; the engine asks again`);
    return pool.get({ host: broker.host, port: broker.port });
  }

  /** Leaders of `topics` (all topics for null); also refreshes the brokers' addresses. */
  async metadata(topics: readonly string[] | null): Promise<ClusterMetadata> {
    const connection = await this.any();
    const answer = await call(() => metadataV9.api.async(connection, topics === null ? null : [...topics], false, false, false));
    this.brokers = new Map(answer.brokers.map((b) => [b.nodeId, { nodeId: b.nodeId, host: b.host, port: b.port }]));
    const found = new Map<string, TopicMetadata>();
    for (const t of answer.topics) {
      found.set(t.name, {
        name: t.name,
        errorCode: t.errorCode,
        partitions: t.partitions.map((p) => ({ partition: p.partitionIndex, leader: p.leaderId, leaderEpoch: p.leaderEpoch, errorCode: p.errorCode })).sort((a, b) => a.partition - b.partition),
      });
    }
    return { brokers: this.brokers, topics: found };
  }

  /** The coordinator of `key` (a group id, or a transactional id), as a node id, or the error code the broker answered. */
  async findCoordinator(key: string, keyType: (typeof COORDINATOR_OF)[keyof typeof COORDINATOR_OF] = COORDINATOR_OF.group): Promise<{ nodeId: number } | { errorCode: number }> {
    const connection = await this.any();
    const answer = await call(() => findCoordinatorV3.api.async(connection, keyType, [key]));
    const found = answer.coordinators[0];
    if (found === undefined) return { errorCode: ERROR.COORDINATOR_NOT_AVAILABLE };
    if (found.errorCode !== ERROR.NONE) return { errorCode: found.errorCode };
    this.brokers.set(found.nodeId, { nodeId: found.nodeId, host: found.host, port: found.port });
    return { nodeId: found.nodeId };
  }

  /** The coordinator of `key` (a group by default); an answer other than NONE thrown as KafkaAnswerError naming `what`. */
  async coordinator(key: string, what: string, keyType: (typeof COORDINATOR_OF)[keyof typeof COORDINATOR_OF] = COORDINATOR_OF.group): Promise<number> {
    const found = await this.findCoordinator(key, keyType);
    if ('errorCode' in found) throw new KafkaAnswerError(found.errorCode, `finding the coordinator of ${what}`);
    return found.nodeId;
  }

  async joinGroup(
    nodeId: number,
    groupId: string,
    sessionTimeoutMs: number,
    rebalanceTimeoutMs: number,
    memberId: string,
    protocols: { name: string; metadata: Buffer }[],
  ): Promise<JoinAnswer> {
    const connection = await this.node(nodeId);
    return call(() => joinGroupV6.api.async(connection, groupId, sessionTimeoutMs, rebalanceTimeoutMs, memberId, null, 'consumer', protocols));
  }

  async syncGroup(nodeId: number, groupId: string, generationId: number, memberId: string, assignments: { memberId: string; assignment: Buffer }[]) {
    const connection = await this.node(nodeId);
    return call(() => syncGroupV4.api.async(connection, groupId, generationId, memberId, null, 'consumer', null, assignments));
  }

  async heartbeat(nodeId: number, groupId: string, generationId: number, memberId: string): Promise<number> {
    const connection = await this.node(nodeId);
    const answer = await call(() => heartbeatV4.api.async(connection, groupId, generationId, memberId, null));
    return answer.errorCode;
  }

  async leaveGroup(nodeId: number, groupId: string, memberId: string): Promise<void> {
    const connection = await this.node(nodeId);
    await call(() => leaveGroupV4.api.async(connection, groupId, [{ memberId, groupInstanceId: null }]));
  }

  /** Commits offsets with their metadata; `generationId` -1 and member '' for a group nobody is a member of. */
  async offsetCommit(nodeId: number, groupId: string, generationId: number, memberId: string, topics: readonly { topic: string; partitions: readonly OffsetToCommit[] }[]): Promise<OffsetCommitAnswer> {
    const connection = await this.node(nodeId);
    return call(() => offsetCommitV8.api.async(connection, groupId, generationId, memberId, null, committedTopics(topics)));
  }

  /** The group's committed offsets (with metadata); with `requireStable`, one a transaction holds pending answers UNSTABLE_OFFSET_COMMIT until it ends (KIP-447). */
  async offsetFetch(nodeId: number, groupId: string, topics: readonly { topic: string; partitions: readonly number[] }[], requireStable = false): Promise<OffsetFetchAnswer> {
    const connection = await this.node(nodeId);
    return call(() => offsetFetchV7.api.async(connection, [{ groupId, topics: topics.map((t) => ({ name: t.topic, partitionIndexes: [...t.partitions] })) }], requireStable));
  }

  /** Adds `groupId`'s offsets to the open transaction of `transactionalId` (to its transaction coordinator `nodeId`); the answer's error code. */
  async addOffsetsToTxn(nodeId: number, transactionalId: string, producerId: bigint, producerEpoch: number, groupId: string): Promise<number> {
    const connection = await this.node(nodeId);
    const answer = await call(() => addOffsetsToTxnV3.api.async(connection, transactionalId, producerId, producerEpoch, groupId));
    return answer.errorCode;
  }

  /** Commits offsets inside the open transaction, for the member of a generation: refused from a member the group has moved past (KIP-447's fence). */
  async txnOffsetCommit(
    nodeId: number,
    transaction: { transactionalId: string; producerId: bigint; producerEpoch: number },
    group: { groupId: string; generationId: number; memberId: string; groupInstanceId: string | null },
    topics: readonly { topic: string; partitions: readonly OffsetToCommit[] }[],
  ): Promise<TxnOffsetCommitAnswer> {
    const connection = await this.node(nodeId);
    const { transactionalId, producerId, producerEpoch } = transaction;
    return call(() => txnOffsetCommitV3.api.async(connection, transactionalId, group.groupId, producerId, producerEpoch, group.generationId, group.memberId, group.groupInstanceId, committedTopics(topics)));
  }


  /** Offsets by timestamp (-2: the earliest, -1: the latest) of partitions led by `nodeId`. */
  async listOffsets(nodeId: number, isolation: 0 | 1, topics: readonly { topic: string; partitions: readonly { partition: number; timestamp: bigint }[] }[]): Promise<ListOffsetsAnswer> {
    const connection = await this.node(nodeId);
    const asked = topics.map((t) => ({ name: t.topic, partitions: t.partitions.map((p) => ({ partitionIndex: p.partition, currentLeaderEpoch: -1, timestamp: p.timestamp })) }));
    return call(() => listOffsetsV6.api.async(connection, -1, isolation, asked));
  }


  /** One partition's answer to a read-committed fetch of `maxBytes` from `offset`, as a read without a group asks (undefined when the answer does not name it). */
  async fetchOne(nodeId: number, topic: string, partition: number, offset: bigint, maxBytes: number): Promise<FetchAnswerPartition | undefined> {
    const answer = await this.fetch(nodeId, { isolation: 1, maxWaitMs: 100, minBytes: 1, maxBytes, topics: [{ topic, partitions: [{ partition, offset, maxBytes }] }] });
    return answer.responses.find((t) => t.topicId === topic)?.partitions.find((p) => p.partitionIndex === partition);
  }

  /** One fetch from the leader `nodeId`; a session error comes back as the answer's errorCode. */
  async fetch(nodeId: number, ask: FetchAsk): Promise<FetchAnswer> {
    const connection = await this.node(nodeId, this.fetchPool);
    const { session } = ask;
    const topics = ask.topics.map((t) => ({ topicId: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, currentLeaderEpoch: -1, fetchOffset: p.offset, lastFetchedEpoch: -1, partitionMaxBytes: p.maxBytes })) }));
    const forgotten = session === undefined ? [] : session.forgotten.map((t) => ({ topicId: t.topic, partitions: t.partitions }));
    return call(() => fetchV12.api.async(connection, ask.maxWaitMs, ask.minBytes, ask.maxBytes, ask.isolation, session?.id ?? 0, session?.epoch ?? -1, topics, forgotten, ''));
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.fetchPool.close()]);
  }
}

/** Offsets to commit as OffsetCommit and TxnOffsetCommit name them. */
function committedTopics(topics: readonly { topic: string; partitions: readonly OffsetToCommit[] }[]) {
  return topics.map((t) => ({ name: t.topic, partitions: t.partitions.map((p) => ({ partitionIndex: p.partition, committedOffset: p.offset, committedLeaderEpoch: -1, committedMetadata: p.metadata })) }));
}

function parseBroker(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  if (at < 0) return { host: address, port: 9092 };
  return { host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)) };
}
