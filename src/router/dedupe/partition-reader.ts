// The PartitionReader of the router's call memory (call-memory.ts) on the port's key
// reader: the offset of the window's start (ListOffsets by time), then the records up to
// where routing resumes, read in pieces so that a long window is never held whole.
import type { KafkaClient, KeyReader } from '../../kafka/index.js';
import { createKeyReader } from '../../kafka/index.js';
import type { PartitionReader } from './call-memory.js';

/** Offsets read at once: a piece of 1 KB calls is about 10 MB. */
const PIECE_OFFSETS = 10_000n;

export interface ClosablePartitionReader {
  read: PartitionReader;
  close(): Promise<void>;
}

export function createPartitionReader(kafka: KafkaClient, topic: string): ClosablePartitionReader {
  let reader: KeyReader | undefined;
  return {
    async *read(partition, sinceMs, from, until) {
      reader ??= createKeyReader(kafka);
      const [range] = await reader.ranges([{ topic, partition, sinceMs }]);
      let start = range!.start;
      if (from !== undefined && from > start) start = from;
      for (let at = start; at < until; at += PIECE_OFFSETS) {
        const end = at + PIECE_OFFSETS < until ? at + PIECE_OFFSETS : until;
        const [piece] = await reader.read([{ ...range!, start: at, end }], null);
        yield piece!.records;
      }
    },
    async close() {
      await reader?.close();
    },
  };
}
