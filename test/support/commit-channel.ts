// A commit channel for a commit ledger without a broker (src/delivery/commit-ledger.ts):
// each commit request waits until the test answers it, fails it, or lets it return
// without the broker's acknowledgement (as kafkajs did from a runner that was not running).
import { partitionKey } from '../../src/kafka/index.js';
import type { CommitChannel } from '../../src/delivery/partition-stream.js';
import { StreamProgress } from '../../src/delivery/stream-progress.js';
import type { PartitionCommit } from '../../src/delivery/stream-progress.js';

export interface CommitRequest {
  offsets: PartitionCommit[];
  /** The broker took it. */
  answer(): void;
  /** The broker refused it, or the client gave up. */
  fail(error?: Error): void;
  /** kafkajs returned without a request (its runner not running): no acknowledgement. */
  returnUnacknowledged(): void;
}

export interface FakeCommitChannel extends CommitChannel {
  /** Requests sent and not settled yet, oldest first. */
  readonly out: CommitRequest[];
  /** Every request sent, settled or not, oldest first. */
  readonly sent: PartitionCommit[][];
  member: boolean;
  running: boolean;
  /** Partitions no longer in the assignment (by ledger key, `<partition>:<topic>`). */
  readonly unassigned: Set<string>;
}

/** `onFinish`: told each finished record before its progress moves (as the stream lets go of it). */
export function fakeCommitChannel(onFinish: (key: string, offset: string) => void = () => undefined): FakeCommitChannel {
  let acknowledged = 0;
  const unassigned = new Set<string>();
  const out: CommitRequest[] = [];
  const settle = (request: CommitRequest) => out.splice(out.indexOf(request), 1);
  const channel: FakeCommitChannel = {
    out,
    sent: [],
    member: true,
    running: true,
    unassigned,
    progress: new StreamProgress((key) => !unassigned.has(key)),
    finish(topic, partition, offset) {
      const key = partitionKey(topic, partition);
      onFinish(key, offset);
      return channel.progress.finish(key, offset);
    },
    isMember: () => channel.member,
    canSend: () => channel.running,
    acknowledged: () => acknowledged,
    send(offsets) {
      channel.sent.push(offsets);
      return new Promise<void>((resolve, reject) => {
        const request: CommitRequest = {
          offsets,
          answer: () => {
            settle(request);
            acknowledged += 1;
            resolve();
          },
          fail: (error = Object.assign(new Error('the broker went away'), { retriable: true })) => {
            settle(request);
            reject(error);
          },
          returnUnacknowledged: () => {
            settle(request);
            resolve();
          },
        };
        out.push(request);
      });
    },
  };
  return channel;
}
