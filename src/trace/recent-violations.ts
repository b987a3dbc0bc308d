// `GET /v1/violations` and the console's violations view (docs/tracking-plans.md#the-console-view):
// the `violations` records of a window (by default the last hour), every partition read
// without a consumer group, counted per source and event. It writes nothing.
import type { ConfigStore } from '../config/store.js';
import { KafkaUnavailableError } from '../errors.js';
import { createAdmin, createKeyReader, isKafkaClientError } from '../kafka/index.js';
import type { KafkaClient, KeyReader } from '../kafka/index.js';
import { summarizeViolations } from '../tracking-plans/index.js';
import type { ViolationsDocument } from '../admin/answers.js';
import { createTopology } from '../runtime/topology.js';
import { HEADER, headerText } from '../runtime/headers.js';

export interface ViolationsQuery {
  sinceMs: number;
  untilMs?: number | undefined;
  /** Only this source's records. */
  source?: string | undefined;
}

/** The answer of `GET /v1/violations`, declared with the admin API's others. */
export type { ViolationsDocument };

/**
 * The records read of each partition at most: the latest of the window. NOTE: a bound, as
 * the answer is decoded on the event loop of the role that serves it, and a plan that every
 * call of a busy source breaks writes a record per call.
 */
export const MAX_RECORDS_PER_PARTITION = 20_000;
/** Examples in the answer. */
export const RECENT_EXAMPLES = 20;

export async function recentViolations(deps: { config: Pick<ConfigStore, 'current'>; kafka: KafkaClient }, query: ViolationsQuery, nowMs = Date.now()): Promise<ViolationsDocument> {
  const config = deps.config.current();
  const topic = createTopology(config.kafka.topicPrefix).names.violations;
  const admin = createAdmin(deps.kafka);
  let reader: KeyReader | undefined;
  const untilMs = query.untilMs ?? nowMs;
  const window = { since: new Date(query.sinceMs).toISOString(), until: new Date(untilMs).toISOString() };
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(topic)) return { ...window, complete: true, ...summarizeViolations([], RECENT_EXAMPLES) };
    const partitions = (await admin.partitionCounts([topic])).get(topic) ?? 1;
    reader = createKeyReader(deps.kafka);
    const ranges = await reader.ranges(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, sinceMs: query.sinceMs, untilMs: query.untilMs })));
    let complete = true;
    const bounded = ranges.map((range) => {
      const first = range.end - BigInt(MAX_RECORDS_PER_PARTITION);
      if (range.start >= first) return range;
      complete = false;
      return { ...range, start: first };
    });
    const reads = await reader.read(bounded, null);
    const values = reads.flatMap((read) => read.records.filter((r) => query.source === undefined || headerText(r.headers, HEADER.sourceId) === query.source).map((r) => r.value));
    return { ...window, complete, ...summarizeViolations(values, RECENT_EXAMPLES) };
  } catch (error) {
    if (!isKafkaClientError(error)) throw error;
    throw new KafkaUnavailableError(`${(error as Error).message} (Kafka at ${config.kafka.brokers.join(',')}: check kafka.brokers and that the broker is up)`, { cause: error });
  } finally {
    await reader?.close().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}

