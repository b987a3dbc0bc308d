// What a person should know about a trace's answer besides the document: parts of the
// window the topics no longer hold (docs/follow-a-message.md#limits). Pure.
import { formatTimestamp } from '../calls/index.js';
import type { KeyRecords } from '../kafka/index.js';

/**
 * A note when retention has deleted records that may lie inside the window: the read
 * began at the partition's first kept record (not at the log's first offset), and that
 * record is younger than the window's start.
 */
export function retentionNote(read: KeyRecords, sinceMs: number): string | undefined {
  const { topic, partition, logStart, start, end } = read.range;
  if (logStart <= 0n || start !== logStart) return undefined;
  if (end === start) {
    return `partition ${partition} of ${topic} holds no records any more (all are past the topic's retention): what the window had there is not traced`;
  }
  if (read.firstTimestampMs === undefined || read.firstTimestampMs <= sinceMs) return undefined;
  return (
    `partition ${partition} of ${topic} keeps records from ${formatTimestamp(read.firstTimestampMs)} on (older ones are past the topic's retention): ` +
    `the window from ${formatTimestamp(sinceMs)} is traced from there`
  );
}
