// Which offsets of a stretch of a partition hold no record a read-committed reader sees:
// transaction markers (each commit or abort takes an offset) and the records of aborted
// transactions. Read without a consumer group, nothing written; the records themselves
// are not copied (only the offsets of their batches are looked at). What counts records
// by offsets uses it (src/observability/record-counts.ts, docs/admin-api.md#get-v1destinations).
import type { GapReader, OffsetRun, OffsetSpan } from '../observability/record-counts.js';
import type { KafkaClient } from './client.js';
import { recordOffsets } from './fetcher.js';
import { ERROR, KafkaAnswerError, Wire } from './wire.js';

/** A GapReader on its own connections. NOTE: a span of a partition the broker no longer holds (retention) fails the read. */
export interface RecordGapReader extends GapReader {
  close(): Promise<void>;
}

/** Read committed (docs/kafka.md#transactions): an open transaction's records are above the last stable offset, an aborted one's never seen. */
const ISOLATION = 1;

/** Bytes of one fetch (one partition): a few dozen requests for 100,000 letters. */
const PARTITION_FETCH_BYTES = 4 * 1024 * 1024;

/** Partitions read at once. */
const READS_AT_ONCE = 4;

/** Answers in a row that do not move, before a span is given up (the broker keeps answering nothing below the end). */
const EMPTY_ANSWERS_TO_GIVE_UP = 3;

export function createRecordGapReader(client: KafkaClient): RecordGapReader {
  const wire = new Wire(client.settings, client.clientId);
  return {
    async read(spans, onRead) {
      const wanted = spans.filter((s) => s.to > s.from);
      if (wanted.length === 0) return;
      const metadata = await wire.metadata([...new Set(wanted.map((s) => s.topic))]);
      const leaders = wanted.map((span) => {
        const leader = metadata.topics.get(span.topic)?.partitions.find((p) => p.partition === span.partition)?.leader ?? -1;
        if (leader < 0) throw new Error(`partition ${span.partition} of topic "${span.topic}" has no leader right now (a broker restarting?); it is read again at the next ask`);
        return leader;
      });
      let next = 0;
      const reader = async () => {
        while (next < wanted.length) {
          const i = next++;
          await readSpan(wire, leaders[i]!, wanted[i]!, onRead);
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, wanted.length) }, reader));
    },
    async close() {
      await wire.close();
    },
  };
}

async function readSpan(wire: Wire, nodeId: number, span: OffsetSpan, onRead: (span: OffsetSpan, gaps: OffsetRun[], readTo: bigint) => void): Promise<void> {
  const { topic, partition, to } = span;
  let position = span.from;
  let empty = 0;
  while (position < to) {
    const answer = await wire.fetch(nodeId, {
      isolation: ISOLATION,
      maxWaitMs: 100,
      minBytes: 1,
      maxBytes: PARTITION_FETCH_BYTES,
      topics: [{ topic, partitions: [{ partition, offset: position, maxBytes: PARTITION_FETCH_BYTES }] }],
    });
    const answered = answer.responses.find((t) => t.topicId === topic)?.partitions.find((p) => p.partitionIndex === partition);
    if (answered === undefined) throw new Error(`reading ${topic} partition ${partition} at offset ${position}: the broker's answer did not name the partition; it is read again at the next ask`);
    if (answered.errorCode !== ERROR.NONE) throw new KafkaAnswerError(answered.errorCode, `reading ${topic} partition ${partition} at offset ${position}`);
    const { offsets, next } = recordOffsets(position, answered);
    const readTo = next > to ? to : next;
    if (readTo <= position) {
      empty += 1;
      if (empty >= EMPTY_ANSWERS_TO_GIVE_UP) throw new Error(`reading ${topic} partition ${partition}: ${empty} answers in a row brought nothing at offset ${position}, below ${to}; it is read again at the next ask`);
      continue;
    }
    empty = 0;
    const gaps: OffsetRun[] = [];
    let expected = position;
    for (const offset of offsets) {
      if (offset >= readTo) break;
      if (offset > expected) gaps.push([expected, offset - 1n]);
      expected = offset + 1n;
    }
    if (readTo > expected) gaps.push([expected, readTo - 1n]);
    onRead(span, gaps, readTo);
    position = readTo;
  }
}
