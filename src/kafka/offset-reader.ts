// Which offsets of a partition hold a record a read-committed reader sees, read without
// a consumer group and without copying the records (only their batches' offsets are
// looked at): what the counts of records by offsets build on
// (src/observability/record-gaps.ts, docs/admin-api.md#get-v1destinations).
import type { OffsetReads } from '../observability/record-gaps.js';
import type { KafkaClient } from './client.js';
import { recordOffsets } from './fetcher.js';
import { ERROR, KafkaAnswerError, Wire } from './wire.js';

/** OffsetReads on connections of their own. */
export interface OffsetReader extends OffsetReads {
  close(): Promise<void>;
}

/** Bytes of one fetch (one partition): a few dozen requests for 100,000 letters. */
const PARTITION_FETCH_BYTES = 4 * 1024 * 1024;

export function createOffsetReader(client: KafkaClient): OffsetReader {
  const wire = new Wire(client.settings, client.clientId);
  return {
    async leaders(partitions) {
      const metadata = await wire.metadata([...new Set(partitions.map((p) => p.topic))]);
      return partitions.map(({ topic, partition }) => metadata.topics.get(topic)?.partitions.find((p) => p.partition === partition)?.leader ?? -1);
    },
    async offsets(leader, topic, partition, from) {
      const answered = await wire.fetchOne(leader, topic, partition, from, PARTITION_FETCH_BYTES);
      if (answered === undefined) throw new Error(`reading ${topic} partition ${partition} at offset ${from}: the broker's answer did not name the partition; it is read again at the next ask`);
      if (answered.errorCode !== ERROR.NONE) throw new KafkaAnswerError(answered.errorCode, `reading ${topic} partition ${partition} at offset ${from}`);
      return recordOffsets(from, answered);
    },
    async close() {
      await wire.close();
    },
  };
}
