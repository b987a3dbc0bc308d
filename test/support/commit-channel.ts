// A commit channel for a commit ledger without a broker (src/kafka/commit-ledger.ts):
// each commit request waits until the test answers it, fails it, or lets it return
// without the broker's acknowledgement (as kafkajs does from a runner that is not running).
import type { CommitChannel, PartitionCommit } from '../../src/kafka/index.js';

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

export function fakeCommitChannel(): FakeCommitChannel {
  let acknowledged = 0;
  const out: CommitRequest[] = [];
  const settle = (request: CommitRequest) => out.splice(out.indexOf(request), 1);
  const channel: FakeCommitChannel = {
    out,
    sent: [],
    member: true,
    running: true,
    unassigned: new Set(),
    isMember: () => channel.member,
    canSend: () => channel.running,
    isAssigned: (key) => !channel.unassigned.has(key),
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
