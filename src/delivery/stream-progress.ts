// The partition stream's offsets (partition-stream.ts): each assigned partition's
// progress (src/kafka/offset-progress.ts) and which partitions moved since their last
// commit (dirty). Partitions and offsets only: when a commit goes out and what the lanes
// wait for is the commit ledger's (commit-ledger.ts).
import { splitPartitionKey } from '../kafka/index.js';
import type { CommitPoint, PartitionProgress } from '../kafka/index.js';

/** One partition's entry of a commit request: the first unfinished offset, and the finished ones above it. */
export interface PartitionCommit {
  topic: string;
  partition: number;
  offset: string;
  metadata: string;
}

/** A commit's partitions, with each one's progress `changeCount` when it was taken. */
export interface CommitSnapshot {
  offsets: PartitionCommit[];
  changes: Map<string, number>;
}

export class StreamProgress {
  private readonly progress = new Map<string, PartitionProgress>();
  private readonly dirty = new Set<string>();
  /** Each partition's `changeCount` at its last commit. */
  private readonly committedChanges = new Map<string, number>();
  /** Partitions a transaction's offsets hold out of commits (CommitLedger.hold). */
  private readonly held = new Set<string>();
  /** Told when a partition turns dirty (`first`: none was before). */
  private listener: ((first: boolean) => void) | undefined;

  constructor(private readonly isAssigned: (key: string) => boolean) {}

  /** The role's side hears here when a partition turns dirty. */
  listen(listener: (first: boolean) => void): void {
    this.listener = listener;
  }

  /** Partitions moved since their last commit. */
  get dirtyCount(): number {
    return this.dirty.size;
  }

  progressAt(key: string): PartitionProgress | undefined {
    return this.progress.get(key);
  }

  /** Tracks the partition from `progress` (read from its commit, or from its first fetch). */
  track(key: string, progress: PartitionProgress): void {
    this.progress.set(key, progress);
  }

  /** The record finished; false when the partition is not tracked (not ours any more: the next owner redoes it). */
  finish(key: string, offset: string): boolean {
    const progress = this.progress.get(key);
    if (progress === undefined) return false;
    progress.finish(offset);
    this.moved(key);
    return true;
  }

  /** The partition's progress may have moved (gaps skipped): dirty if it did since its last commit. */
  moved(key: string): void {
    if (this.progress.get(key)?.changeCount !== this.committedChanges.get(key)) this.markDirty(key);
  }

  /** The partition's progress moved (it starts from an older group's commit): to be committed. */
  markDirty(key: string): void {
    const first = this.dirty.size === 0;
    this.dirty.add(key);
    this.listener?.(first);
  }

  /** The partition is no longer this member's: nothing of it to commit. */
  forget(key: string): void {
    this.progress.delete(key);
    this.dirty.delete(key);
    this.committedChanges.delete(key);
  }

  /** Keeps the partition out of snapshots (it stays dirty) until its `release`. */
  hold(key: string): void {
    this.held.add(key);
  }

  release(key: string): void {
    this.held.delete(key);
  }

  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /** Every dirty partition at its commit point, but the held ones (still dirty); those no longer assigned stop being dirty. */
  snapshot(): CommitSnapshot {
    const changes = new Map<string, number>();
    const offsets: PartitionCommit[] = [];
    for (const key of this.dirty) {
      const progress = this.progress.get(key);
      if (progress === undefined || !this.isAssigned(key)) {
        this.dirty.delete(key);
        continue;
      }
      if (this.held.has(key)) continue;
      changes.set(key, progress.changeCount);
      const { topic, partition } = splitPartitionKey(key);
      offsets.push({ topic, partition, ...progress.commitPoint() });
    }
    return { offsets, changes };
  }

  /** The group holds `point` for the partition (a transaction committed it): clean if that is its commit point now. */
  committedAt(key: string, point: CommitPoint): void {
    const progress = this.progress.get(key);
    if (progress === undefined) return;
    const now = progress.commitPoint();
    if (now.offset !== point.offset || now.metadata !== point.metadata) return;
    this.committedChanges.set(key, progress.changeCount);
    this.dirty.delete(key);
  }

  /** The snapshot's commit was answered: a partition that did not move since is clean. */
  committed(changes: ReadonlyMap<string, number>): void {
    for (const [key, count] of changes) {
      this.committedChanges.set(key, count);
      if (this.progress.get(key)?.changeCount === count) this.dirty.delete(key);
    }
  }
}
