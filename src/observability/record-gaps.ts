// Which offsets of a stretch of a partition hold no record a read-committed reader sees:
// transaction markers (each commit or abort takes an offset) and the records of aborted
// transactions (docs/kafka.md#transactions). The GapReader of record-counts.ts, on the
// Kafka port's reads of record offsets (src/kafka/offset-reader.ts).
import type { GapReader, OffsetRun, OffsetSpan } from './record-counts.js';

/** What the Kafka port reads: each partition's leader, and one answer's record offsets. */
export interface OffsetReads {
  /** Each partition's leader, in order; -1 when it has none right now. */
  leaders(partitions: readonly { topic: string; partition: number }[]): Promise<number[]>;
  /** The offsets at or after `from` of one answer's records (read committed), and the position after it. */
  offsets(leader: number, topic: string, partition: number, from: bigint): Promise<{ offsets: bigint[]; next: bigint }>;
}

/** Partitions read at once. */
const READS_AT_ONCE = 4;

/** Answers in a row that do not move, before a span is given up (the broker keeps answering nothing below the end). */
const EMPTY_ANSWERS_TO_GIVE_UP = 3;

/** NOTE: a span of a partition the broker no longer holds (retention) fails the read. */
export function recordGapReader(reads: OffsetReads): GapReader {
  return {
    async read(spans, onRead) {
      const wanted = spans.filter((s) => s.to > s.from);
      if (wanted.length === 0) return;
      const leaders = await reads.leaders(wanted);
      wanted.forEach((span, i) => {
        if (leaders[i]! < 0) throw new Error(`partition ${span.partition} of topic "${span.topic}" has no leader right now (a broker restarting?); it is read again at the next ask`);
      });
      let next = 0;
      const reader = async () => {
        while (next < wanted.length) {
          const i = next++;
          await readSpan(reads, leaders[i]!, wanted[i]!, onRead);
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, wanted.length) }, reader));
    },
  };
}

async function readSpan(reads: OffsetReads, leader: number, span: OffsetSpan, onRead: (span: OffsetSpan, gaps: OffsetRun[], readTo: bigint) => void): Promise<void> {
  const { topic, partition, to } = span;
  let position = span.from;
  let empty = 0;
  while (position < to) {
    const { offsets, next } = await reads.offsets(leader, topic, partition, position);
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
