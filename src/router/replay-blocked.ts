// `switchyard replay --blocked --source ID [--since TIME] [--until TIME] [--dry-run]`
// (docs/tracking-plans.md#replay): the source's calls in `calls.blocked` routed again,
// through the config and the plan as they are now. A call that passes goes to its
// destinations as the router would send it (the same messageId and body); one that still
// violates is blocked again (a new record in `calls.blocked`, its violations recorded).
//
// What was replayed is committed in the source's replay group as a ledger, as the
// dead-letter replay keeps its own (src/delivery/dlq/replay-ledger.ts): only after the writes
// are acknowledged, so a replay that dies half-way routes some calls at most twice and
// loses none, and a second replay does not route the same calls again.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { ReplayLedgerFullError } from '../errors.js';
import { forgetGroup, readReplayLedgers } from '../delivery/dlq/replay.js';
import { MAX_LEDGER_METADATA_CHARS, isDone, ledgerMetadata, markDone } from '../delivery/dlq/replay-ledger.js';
import type { OffsetRange, ReplayLedger } from '../delivery/dlq/replay-ledger.js';
import type { TimeRange } from '../delivery/dlq/dead-letters.js';
import { inTimeRange } from '../delivery/dlq/dead-letters.js';
import { createAdmin, createProducer } from '../kafka/index.js';
import type { KafkaAdmin, OutboundRecord, RecordProducer, ScannedRecord } from '../kafka/index.js';
import type { RoleDeps } from '../runtime/deps.js';
import { runAll } from '../runtime/service.js';
import { planShapedCall } from './plan-call.js';
import { blockedRecord, violationRecord } from './plan-records.js';
import { compileRoutingTable } from './routing-table.js';
import type { RoutingTable } from './routing-table.js';
import { replayBlockedDryRunGroupId, replayBlockedGroupId } from '../runtime/group-ids.js';
import { scanTopic } from '../delivery/dlq/scan-topic.js';
import type { ScannedBatch } from '../delivery/dlq/scan-topic.js';
import { createTopology } from '../runtime/topology.js';
import type { TopicNames } from '../runtime/topics.js';
import { HEADER, headerText } from '../runtime/headers.js';
import { invalidRecord } from '../runtime/invalid-record.js';

export interface BlockedReplayOptions {
  sourceId: string;
  /** Only calls received in this range (the `calls.blocked` record's time: when the call was received). */
  range?: TimeRange | undefined;
  /** Plan each call and count, write nothing, record nothing. */
  dryRun?: boolean | undefined;
  /** Told of each call once its outcome is acknowledged (or, in a dry run, decided). */
  onCall?: ((call: ReplayedCall) => void) | undefined;
  /** Give up when nothing moved for this long (the group never joined, the broker went away). */
  stallTimeoutMs?: number | undefined;
}

/** What became of one blocked call: `routed` (to `destinations`), `blocked` again, or `invalid` (the config no longer takes it). */
export interface ReplayedCall {
  messageId: string | null;
  receivedAtMs: number;
  outcome: 'routed' | 'blocked' | 'invalid';
  destinations: string[];
}

export interface BlockedReplayResult {
  routed: number;
  blocked: number;
  invalid: number;
}

export async function replayBlockedCalls(deps: RoleDeps, options: BlockedReplayOptions): Promise<BlockedReplayResult> {
  const replay = new BlockedReplay(deps, options);
  try {
    return await replay.run();
  } finally {
    await replay.close();
  }
}

class BlockedReplay {
  private readonly config: Config;
  private readonly names: TopicNames;
  private readonly table: RoutingTable;
  private readonly groupId: string;
  private readonly scanGroup: string;
  private readonly logger: Logger;
  private readonly range: TimeRange;
  private readonly dryRun: boolean;
  private readonly admin: KafkaAdmin;
  /** Undefined in a dry run: nothing is written. */
  private producer: RecordProducer | undefined;
  private ledgers = new Map<number, ReplayLedger>();
  private readonly result: BlockedReplayResult = { routed: 0, blocked: 0, invalid: 0 };

  constructor(
    private readonly deps: RoleDeps,
    private readonly options: BlockedReplayOptions,
  ) {
    this.config = deps.config.current();
    this.names = createTopology(this.config.kafka.topicPrefix).names;
    this.table = compileRoutingTable(this.config, this.names);
    this.groupId = replayBlockedGroupId(this.config, options.sourceId);
    this.dryRun = options.dryRun === true;
    this.scanGroup = this.dryRun ? replayBlockedDryRunGroupId(this.config, options.sourceId) : this.groupId;
    this.logger = deps.logger.child({ component: 'replay-blocked', source: options.sourceId });
    this.range = options.range ?? {};
    this.admin = createAdmin(deps.kafka);
  }

  async run(): Promise<BlockedReplayResult> {
    const topic = this.names.callsBlocked;
    await this.admin.connect();
    if (!(await this.admin.listTopics()).includes(topic)) {
      this.logger.info({ topic }, 'no blocked calls to replay: the topic does not exist yet');
      return this.result;
    }
    if (!this.dryRun) {
      // The topics the calls may go to now: the config's, as the router creates them.
      await this.admin.ensureTopics(createTopology(this.config.kafka.topicPrefix).router(this.config), this.config.kafka);
      this.producer = createProducer(this.deps.kafka);
      await this.producer.connect();
    }
    const { ledgers, highs } = await readReplayLedgers(this.admin, [this.groupId], topic);
    this.ledgers = ledgers;
    const ends = new Map([...highs].filter(([partition, high]) => high > ledgers.get(partition)!.position));
    if (ends.size > 0) await scanTopic(this.deps.kafka, { topic, groupId: this.scanGroup, ends, onBatch: (batch) => this.replayBatch(batch), stallTimeoutMs: this.options.stallTimeoutMs });
    this.logger.info({ ...this.result, dryRun: this.dryRun }, this.dryRun ? 'blocked calls planned again (dry run: nothing written)' : 'blocked calls replayed');
    return this.result;
  }

  async close(): Promise<void> {
    const { admin, scanGroup } = this;
    await runAll([async () => this.producer?.disconnect(), async () => (this.dryRun ? forgetGroup(admin, scanGroup) : undefined), () => admin.disconnect()]);
  }

  private async replayBatch(batch: ScannedBatch): Promise<'more' | 'stop'> {
    const ledger = this.ledgers.get(batch.partition)!;
    const messages = new Map<string, OutboundRecord[]>();
    const add = (topic: string, record: OutboundRecord) => {
      const list = messages.get(topic);
      if (list === undefined) messages.set(topic, [record]);
      else list.push(record);
    };
    const done: OffsetRange[] = [];
    const replayed: ReplayedCall[] = [];
    for (const record of batch.records) {
      if (isDone(ledger, record.offset)) continue;
      // Another source's call is none of this replay's business: dealt with, for this source's group.
      if (headerText(record.headers, HEADER.sourceId) !== this.options.sourceId) {
        done.push([record.offset, record.offset]);
        continue;
      }
      if (!inTimeRange(this.range, Number(record.timestamp))) continue;
      replayed.push(await this.route(record, add));
      done.push([record.offset, record.offset]);
    }
    const producer = this.producer;
    if (producer !== undefined && done.length > 0) {
      const next = markDone(ledger, done);
      const metadata = ledgerMetadata(next);
      if (metadata.length > MAX_LEDGER_METADATA_CHARS) throw new ReplayLedgerFullError(this.names.callsBlocked, batch.partition, '', `switchyard replay --blocked --source ${this.options.sourceId}`);
      if (messages.size > 0) await producer.send([...messages].map(([topic, records]) => ({ topic, messages: records })));
      // NOTE: committed only after the broker acknowledged the writes above.
      await batch.commit(next.position, metadata);
      this.ledgers.set(batch.partition, next);
    }
    for (const call of replayed) {
      this.result[call.outcome] += 1;
      this.options.onCall?.(call);
    }
    return 'more';
  }

  /** Plans one blocked call with the current config and plan, and adds what the router would write for it. */
  private async route(scanned: ScannedRecord, add: (topic: string, record: OutboundRecord) => void): Promise<ReplayedCall> {
    const { names } = this;
    const record = { ...scanned, topic: names.callsBlocked, offset: scanned.offset.toString() };
    const outcome = await planShapedCall(record, this.table, Date.now, { messageIdHeader: true });
    const receivedAtMs = Number(record.timestamp);
    if (outcome.kind !== 'routed') {
      add(names.callsInvalid, invalidRecord(record, outcome.error));
      return { messageId: headerText(record.headers, HEADER.messageId) ?? null, receivedAtMs, outcome: 'invalid', destinations: [] };
    }
    if (outcome.tracking !== undefined) add(names.violations, violationRecord(outcome));
    if (outcome.tracking?.blocked === true) {
      add(names.callsBlocked, blockedRecord(record, outcome));
      return { messageId: outcome.messageId, receivedAtMs, outcome: 'blocked', destinations: [] };
    }
    const { key, headers, timestamp, body } = outcome;
    const destinations: string[] = [];
    for (const d of outcome.decisions) {
      if (!d.routed) continue;
      const value = d.body ?? body;
      if (value === null) continue;
      add(d.target.topic, { key, value, headers, timestamp });
      destinations.push(d.target.id);
    }
    return { messageId: outcome.messageId, receivedAtMs, outcome: 'routed', destinations };
  }
}
