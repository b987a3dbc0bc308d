// A leader's incremental fetch session (Kafka's KIP-227), pure: the broker keeps the last
// poll's partitions and positions, so the next poll names only those that moved, came or
// went, and its answer only the partitions with records or news: an idle poll of
// thousands of partitions is a few bytes each way (docs/kafka.md#the-consumer-engine).
import { byTopic } from './partition-key.js';

export interface SessionPartition {
  readonly key: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly maxBytes: number;
}

export class FetchSession {
  /** 0: the next request opens a session (epoch 0), naming every partition. */
  private id = 0;
  private epoch = 0;
  /** The partitions the broker holds for the session, as last named; then those of the request out. */
  private held = new Map<string, SessionPartition>();
  private pending: Map<string, SessionPartition> | undefined;

  /** The request that makes the session hold exactly `partitions`: those to name, and those to forget. */
  request(partitions: readonly SessionPartition[]) {
    this.pending = new Map(partitions.map((p) => [p.key, p]));
    if (this.id === 0) return { id: 0, epoch: 0, partitions, forgotten: [] };
    const named = partitions.filter((p) => {
      const was = this.held.get(p.key);
      return was === undefined || was.offset !== p.offset || was.maxBytes !== p.maxBytes;
    });
    const forgotten = byTopic([...this.held.values()].filter((p) => !this.pending!.has(p.key)), (p) => p.partition);
    return { id: this.id, epoch: this.epoch, partitions: named, forgotten };
  }

  /** The broker answered the request out with `sessionId` (0 to an opening one: it keeps no session now). */
  answered(sessionId: number): void {
    if (this.pending === undefined) return;
    if (this.id === 0) [this.id, this.epoch] = [sessionId, 1];
    else this.epoch = this.epoch === 2 ** 31 - 1 ? 1 : this.epoch + 1;
    this.held = this.id === 0 ? new Map() : this.pending;
    this.pending = undefined;
  }

  /** The request out failed, or the broker lost the session: the next poll opens a new one. */
  reset(): void {
    [this.id, this.epoch, this.held, this.pending] = [0, 0, new Map(), undefined];
  }
}
