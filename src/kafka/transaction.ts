// Kafka transactions between Switchyard's own topics (docs/kafka.md#transactions): a
// transactional producer whose transaction holds records and a consumer group's offsets,
// committed or aborted together. The records go out through @platformatic/kafka's
// transactional producer; the offsets as raw calls (wire.ts), because they carry what the
// library's `addOffset` cannot: the member's generation and ids (KIP-447: the coordinator
// refuses a zombie's offsets) and the commit's metadata.
import { setTimeout as sleep } from 'node:timers/promises';
import { Producer as PlatformaticProducer, compatibilityPartitioner } from '@platformatic/kafka';
import type { KafkaClient } from './client.js';
import { errorTypes, isRetriable } from './commit.js';
import { clientRetryDelay, platformaticOptions, toPlatformaticMessages } from './platformatic-client.js';
import { LIBRARY_METADATA_MAX_AGE_MS, checkSendMetadata, topicsOf } from './platformatic-send-guard.js';
import { createSendQueue } from './producer.js';
import { byTopic } from './partition-key.js';
import type { RecordProducer } from './producer.js';
import type { TopicRecords } from './records.js';
import { COORDINATOR_OF, ERROR, KafkaAnswerError, Wire, errorName, isRetriableCode } from './wire.js';

/** The group member whose input offsets a transaction commits (the consumer engine's generation). */
export interface TransactionGroupMember {
  groupId: string;
  generationId: number;
  memberId: string;
  /** Static membership's id; null for a dynamic member. */
  groupInstanceId: string | null;
  /** The group's coordinator (node id), as the membership found it; asked again when it moved. */
  coordinator?: number;
}

/** One partition's offset to commit in a transaction: the first offset not done, with the commit's metadata. */
export interface TransactionOffset {
  topic: string;
  partition: number;
  offset: bigint;
  metadata: string | null;
}

/** Another producer with this transactional id started, or the transaction outlived its timeout: it is aborted; the next `begin()` starts a new epoch. */
export class TransactionFencedError extends Error {
  constructor(transactionalId: string, cause: unknown) {
    super(
      `Kafka transaction of transactional id "${transactionalId}" was fenced (another producer with this id started, or the transaction ran past its timeout and the broker aborted it); its records and offsets are not committed and its input is read again`,
      { cause },
    );
    this.name = 'TransactionFencedError';
  }
}

/** The group refused the transaction's offsets: the member's generation is over (a zombie, KIP-447), so its transaction aborts and the partitions' owner reads its input again. */
export class GroupFencedError extends Error {
  readonly type: string;
  constructor(
    readonly code: number,
    member: TransactionGroupMember,
  ) {
    super(
      `consumer group "${member.groupId}" refused the offsets of member ${member.memberId} (generation ${member.generationId}) in a transaction: the broker answered ${errorName(code)}; the group moved on, the transaction is aborted and the member joins again`,
    );
    this.name = 'GroupFencedError';
    this.type = errorName(code);
  }
}

/** Answers of the group coordinator that mean the member's generation is over. */
const GROUP_FENCED = new Set<number>([ERROR.ILLEGAL_GENERATION, ERROR.UNKNOWN_MEMBER_ID, ERROR.FENCED_INSTANCE_ID, ERROR.REBALANCE_IN_PROGRESS]);
/** Answers that mean this producer's epoch is over. */
const PRODUCER_FENCED_TYPES = new Set(['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING', 'TRANSACTIONAL_ID_NOT_FOUND']);
const PRODUCER_FENCED_CODES = new Set<number>([ERROR.PRODUCER_FENCED, ERROR.INVALID_PRODUCER_EPOCH]);

/** How often a transaction's own request is tried while the broker answers a retriable code (a coordinator loading or moving, a concurrent transaction ending). */
const ATTEMPTS = 40;
const RETRY_MS = 100;
/** The first wait after CONCURRENT_TRANSACTIONS: the previous transaction's markers take a few milliseconds. */
const CONCURRENT_RETRY_MS = 10;

export function isFenced(error: unknown): boolean {
  if (error instanceof TransactionFencedError || error instanceof GroupFencedError) return true;
  return errorTypes(error).some((type) => PRODUCER_FENCED_TYPES.has(type));
}

/** An open transaction: records and offsets are committed together, or not at all. */
export interface Transaction {
  /** Writes the records inside the transaction; resolves once acknowledged (invisible to read-committed consumers until commit). */
  send(records: readonly TopicRecords[]): Promise<void>;
  /** Commits `offsets` of `member`'s group inside the transaction (refused with GroupFencedError when the member is a zombie). */
  sendOffsets(member: TransactionGroupMember, offsets: readonly TransactionOffset[]): Promise<void>;
  /** Commits the records and offsets. On failure the transaction is aborted (as far as the broker lets it) and the error rethrown. */
  commit(): Promise<void>;
  /** Aborts: read-committed consumers never see the records; the offsets stay where they were. */
  abort(): Promise<void>;
}

export interface TransactionalProducerOptions {
  /** This producer's transactional id (docs/kafka.md#transactions says how Switchyard names them; ACLs: a prefix per deployment). */
  transactionalId: string;
  /** How long the broker lets a transaction stay open before it aborts it (a producer that died mid-transaction). Default 10 s. */
  transactionTimeoutMs?: number;
}

export interface TransactionalProducer {
  readonly transactionalId: string;
  /** Registers the transactional id (InitProducerId): an earlier producer with this id is fenced, its open transaction aborted. */
  connect(): Promise<void>;
  /** Opens a transaction (one at a time per producer). */
  begin(): Promise<Transaction>;
  close(): Promise<void>;
}

export const DEFAULT_TRANSACTION_TIMEOUT_MS = 10_000;

/** A producer-fencing answer as TransactionFencedError (with the id that was fenced); other errors as they are. */
function fencedError(transactionalId: string, error: unknown): unknown {
  return isFenced(error) && !(error instanceof GroupFencedError) && !(error instanceof TransactionFencedError) ? new TransactionFencedError(transactionalId, error) : error;
}

/** What an open transaction needs of its producer. */
interface TransactionHost {
  transactionalId: string;
  producer: PlatformaticProducer;
  wire: Wire;
  /** The transaction ended: the producer may open the next; `failed`: it did not commit. */
  ended(failed: boolean): void;
  /** The transaction's commit failed (after it ended here): the next begins on a new producer. */
  failed(): void;
  /** The transactional id's coordinator, once it answered (shared by the producer's transactions). */
  coordinator: { node?: number | undefined };
}

type LibraryTransaction = Awaited<ReturnType<PlatformaticProducer['beginTransaction']>>;

class OpenTransaction implements Transaction {
  private ended = false;
  private written = false;
  private readonly groups = new Set<string>();

  /**
   * NOTE: one request at a time, those that wait merged (producer.ts): @platformatic/kafka
   * 2.12 deduplicates AddPartitionsToTxn, so a second send in flight never added its own
   * partitions, and the broker refused its records (TRANSACTION_ABORTABLE).
   */
  private readonly queue: Pick<RecordProducer, 'send'>;

  constructor(
    private readonly inner: LibraryTransaction,
    private readonly host: TransactionHost,
  ) {
    this.queue = createSendQueue(async (records) => {
      // As every producer's send (producer.ts): the metadata the send reads is checked first (platformatic-send-guard.ts).
      await checkSendMetadata(host.producer, topicsOf(records));
      await inner.send({ messages: toPlatformaticMessages(records) });
    });
  }

  private live(what: string): void {
    if (this.ended) throw new Error(`cannot ${what}: the transaction of "${this.host.transactionalId}" has already ended (a bug in the caller)`);
  }

  async send(records: readonly TopicRecords[]): Promise<void> {
    this.live('send records');
    if (records.every((r) => r.messages.length === 0)) return;
    this.written = true;
    try {
      await this.queue.send(records);
    } catch (error) {
      throw fencedError(this.host.transactionalId, error);
    }
  }

  async sendOffsets(member: TransactionGroupMember, offsets: readonly TransactionOffset[]): Promise<void> {
    this.live('commit offsets');
    if (offsets.length === 0) return;
    const { transactionalId, producer, wire } = this.host;
    const transaction = { transactionalId, producerId: producer.producerId!, producerEpoch: producer.producerEpoch! };
    this.written = true;
    if (!this.groups.has(member.groupId)) {
      const known = this.host.coordinator;
      await retrying(`adding the offsets of group "${member.groupId}" to the transaction of "${transactionalId}"`, async () => {
        // NOTE: found once and kept; found again after no answer, or one other than NONE and
        // CONCURRENT_TRANSACTIONS (the right coordinator's while the last markers are written).
        const node = known.node ?? (await coordinator(wire, transactionalId, COORDINATOR_OF.transaction));
        known.node = undefined;
        const code = await wire.addOffsetsToTxn(node, transactionalId, transaction.producerId, transaction.producerEpoch, member.groupId);
        if (PRODUCER_FENCED_CODES.has(code)) throw new TransactionFencedError(transactionalId, new KafkaAnswerError(code, 'AddOffsetsToTxn'));
        if (code === ERROR.NONE || code === ERROR.CONCURRENT_TRANSACTIONS) known.node = node;
        return code;
      });
      this.groups.add(member.groupId);
    }
    const topics = byTopic(offsets, (o) => o);
    let node = member.coordinator;
    await retrying(`committing the offsets of group "${member.groupId}" in the transaction of "${transactionalId}"`, async () => {
      node ??= await coordinator(wire, member.groupId, COORDINATOR_OF.group);
      const answer = await wire.txnOffsetCommit(node, transaction, member, topics);
      for (const t of answer.topics) {
        for (const p of t.partitions) {
          if (p.errorCode === ERROR.NONE) continue;
          if (GROUP_FENCED.has(p.errorCode)) throw new GroupFencedError(p.errorCode, member);
          if (PRODUCER_FENCED_CODES.has(p.errorCode)) throw new TransactionFencedError(transactionalId, new KafkaAnswerError(p.errorCode, 'TxnOffsetCommit'));
          if (p.errorCode === ERROR.NOT_COORDINATOR || p.errorCode === ERROR.COORDINATOR_NOT_AVAILABLE) node = undefined;
          return p.errorCode;
        }
      }
      return ERROR.NONE;
    });
  }

  /** Ends the transaction here; false when nothing was written (dropped locally: the broker refuses an EndTxn of an empty one). */
  private async end(failed: boolean): Promise<boolean> {
    this.ended = true;
    this.host.ended(failed);
    if (this.written) return true;
    await this.inner.cancel();
    return false;
  }

  async commit(): Promise<void> {
    this.live('commit');
    if (!(await this.end(false))) return;
    try {
      await this.inner.commit();
    } catch (error) {
      this.host.failed();
      await this.abortQuietly();
      throw fencedError(this.host.transactionalId, error);
    }
  }

  async abort(): Promise<void> {
    if (this.ended || !(await this.end(true))) return;
    try {
      await this.inner.abort();
    } catch (error) {
      // NOTE: a fenced producer cannot abort; the broker aborts its transaction (the
      // newer epoch's InitProducerId, or the timeout). Locally the transaction ends.
      await this.inner.cancel().catch(() => undefined);
      if (!isFenced(error)) throw error;
    }
  }

  /** After a failed commit: abort if the broker still lets this producer, else drop the transaction locally. */
  async abortQuietly(): Promise<void> {
    if (this.host.producer.transaction === undefined) return;
    await this.inner.abort().catch(async () => {
      if (this.host.producer.transaction !== undefined) await this.inner.cancel().catch(() => undefined);
    });
  }
}

export function createTransactionalProducer(client: KafkaClient, options: TransactionalProducerOptions): TransactionalProducer {
  const { transactionalId } = options;
  const timeoutMs = options.transactionTimeoutMs ?? DEFAULT_TRANSACTION_TIMEOUT_MS;
  const wire = new Wire(client.settings, client.clientId);
  let open: OpenTransaction | undefined;
  /** Set when a transaction did not commit: the next begin() starts on a new producer. */
  let replace = false;

  const fenced = (error: unknown): unknown => fencedError(transactionalId, error);
  const coordinatorOfId: TransactionHost['coordinator'] = {};
  const newHost = (): TransactionHost => ({
    transactionalId,
    producer: libraryProducer(client, transactionalId, timeoutMs),
    wire,
    ended: (failed) => {
      open = undefined;
      if (failed) replace = true;
    },
    failed: () => (replace = true),
    coordinator: coordinatorOfId,
  });
  let host = newHost();

  /**
   * NOTE: after a transaction that did not commit, the library's producer may hold an epoch
   * or sequence numbers the broker moved past (every later transaction refused as fenced:
   * chaos harness, a broker stop); a new producer registers the id again, bumping the epoch.
   */
  const renewed = (): TransactionHost => {
    if (!replace) return host;
    replace = false;
    const old = host.producer;
    void old.close().catch(() => undefined);
    host = newHost();
    return host;
  };

  return {
    transactionalId,
    async connect() {
      // NOTE: beginTransaction registers the id (InitProducerId) the first time; nothing is
      // written, so the transaction is dropped locally (an EndTxn of an empty one is refused).
      const inner = await host.producer.beginTransaction().catch((error: unknown) => {
        if (isFenced(error)) throw fenced(error);
        throw new Error(
          `could not register the Kafka transactional id "${transactionalId}": the cluster needs its transaction state log (transaction.state.log.replication.factor no larger than the brokers it has) and, with ACLs, Write and Describe on the TransactionalId prefix of this deployment (docs/kafka.md#transactions); or set kafka.transactions to false`,
          { cause: error },
        );
      });
      await inner.cancel();
    },
    async begin() {
      if (open !== undefined) throw new Error(`a transaction of "${transactionalId}" is already open; one at a time per producer (src/runtime/grouped-transactions.ts shares one)`);
      const current = renewed();
      const inner = await current.producer.beginTransaction().catch((error: unknown) => {
        replace = true;
        throw fenced(error);
      });
      open = new OpenTransaction(inner, current);
      return open;
    },
    async close() {
      await open?.abort().catch(() => undefined);
      await host.producer.close();
      await wire.close();
    },
  };
}

/** The library's wait before it asks again: CONCURRENT_TRANSACTIONS (nearly every transaction's first send meets it) after CONCURRENT_RETRY_MS, doubling (docs/benchmarks.md#figures-behind-the-code); the rest as every client. */
export function transactionRetryDelay(client: unknown, operation: string, attempt: number, retries: number, error: unknown): number {
  if (errorTypes(error).includes('CONCURRENT_TRANSACTIONS')) return Math.min(CONCURRENT_RETRY_MS * 2 ** (attempt - 1), 1_000);
  return clientRetryDelay(client, operation, attempt);
}

/** @platformatic/kafka's transactional producer (idempotent, acks=all) for `transactionalId`. */
function libraryProducer(client: KafkaClient, transactionalId: string, timeoutMs: number): PlatformaticProducer {
  // NOTE: `timeout` is both the produce request's ack timeout and the transaction timeout
  // InitProducerId registers (@platformatic/kafka); requests keep the port's own timeout.
  return new PlatformaticProducer({
    ...platformaticOptions(client.settings, client.clientId),
    timeout: timeoutMs,
    idempotent: true,
    transactionalId,
    // NOTE: -1/-1 asks InitProducerId for the id's current producer, whatever it is; the
    // client's default, 0/0, is answered PRODUCER_FENCED for an id used before.
    producerId: -1n,
    producerEpoch: -1,
    partitioner: compatibilityPartitioner,
    metadataMaxAge: LIBRARY_METADATA_MAX_AGE_MS,
    retryDelay: transactionRetryDelay,
  });
}

async function coordinator(wire: Wire, key: string, keyType: (typeof COORDINATOR_OF)[keyof typeof COORDINATOR_OF]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const found = await wire.findCoordinator(key, keyType);
    if ('nodeId' in found) return found.nodeId;
    if (!isRetriableCode(found.errorCode) || attempt >= ATTEMPTS) throw new KafkaAnswerError(found.errorCode, `finding the coordinator of "${key}"`);
    await sleep(RETRY_MS);
  }
}

/** Runs `request` until it answers NONE; a retriable code (or CONCURRENT_TRANSACTIONS) is tried again, another one thrown. */
async function retrying(what: string, request: () => Promise<number>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    let code: number;
    try {
      code = await request();
    } catch (error) {
      if (isFenced(error) || !isRetriable(error) || attempt >= ATTEMPTS) throw error;
      await sleep(RETRY_MS);
      continue;
    }
    if (code === ERROR.NONE) return;
    const again = code === ERROR.CONCURRENT_TRANSACTIONS || isRetriableCode(code);
    if (!again || attempt >= ATTEMPTS) throw new KafkaAnswerError(code, what);
    await sleep(code === ERROR.CONCURRENT_TRANSACTIONS ? Math.min(CONCURRENT_RETRY_MS * 2 ** (attempt - 1), RETRY_MS) : RETRY_MS);
  }
}
