// The router's memory of the (user, source) pairs it has already written to
// `audience.events` as `seen` records, so that it writes one per new pair instead of
// one per call (the audience processor keeps the actual state, `user.sources`). Pure.
//
// Bounded: two generations of at most `maxPairs / 2` pairs each. When the current
// one is full (in pairs, or in characters of user ids: a call may carry an id of many
// kilobytes), the previous one is dropped and the current one takes its place; a
// pair found in the previous generation is copied into the current one. So the pairs
// in use stay, the others age out, and the cache never holds more than `maxPairs`.
// A pair that aged out costs one `seen` record again, nothing else: the processor
// ignores a pair it already has.
//
// It must never claim a pair the state no longer has: a deleted user's pairs are
// dropped (`forget`) when their erasure shows on `user.sources` (seen-follower.ts),
// and a pair written before such a drop and acknowledged after it is not added
// (`epoch`). A call routed between the deletion and the moment this process reads
// its erasure found its pair here and wrote nothing: each pair keeps when a call last
// found it, and `forget` returns those found since the deletion, for the follower to
// write again.

export interface PendingPair {
  userId: string;
  sourceId: string;
  /** The cache's epoch when the record was handed out. */
  epoch: number;
}

/**
 * The cache's clock: tenths of a second since the cache was made. NOTE: small
 * integers (below 2^30, 3.4 years of uptime) are stored unboxed in a Map; a
 * millisecond epoch time would be a heap number allocated on every update.
 */
export const TICK_MS = 100;

/** A pair whose record was written and that no call has found since. */
const NOT_FOUND = -1;

/** source id → user id → when a call last found the pair (a tick), or NOT_FOUND. */
type Generation = Map<string, Map<string, number>>;

export class SeenPairCache {
  private current: Generation = new Map();
  private previous: Generation = new Map();
  private count = 0;
  /** Characters of the user ids in the current generation. */
  private chars = 0;
  private readonly generationSize: number;
  private readonly generationChars: number;
  /**
   * Pairs handed out and not yet acknowledged or abandoned: not handed out twice
   * meanwhile. source id → user id → the epoch it was handed out at.
   */
  private readonly pending = new Map<string, Map<string, number>>();
  private epochValue = 0;
  private followingValue = false;

  private readonly baseMs: number;

  /**
   * `maxPairs`: the bound on the pairs held (see the top of this file); `maxIdChars`:
   * on the characters of their user ids (default 64 a pair). A pair whose id is longer
   * than half of it is never cached: its record is written each time.
   */
  constructor(
    readonly maxPairs: number,
    private readonly nowMs: () => number = Date.now,
    readonly maxIdChars: number = maxPairs * 64,
  ) {
    this.baseMs = nowMs();
    if (!Number.isSafeInteger(maxPairs) || maxPairs < 2) throw new RangeError(`SeenPairCache: maxPairs must be a whole number ≥ 2, got ${maxPairs}`);
    if (!Number.isSafeInteger(maxIdChars) || maxIdChars < 2) throw new RangeError(`SeenPairCache: maxIdChars must be a whole number ≥ 2, got ${maxIdChars}`);
    this.generationSize = Math.floor(maxPairs / 2);
    this.generationChars = Math.floor(maxIdChars / 2);
  }

  /** The tick of an epoch time in ms (for `forget`). */
  tickAt(epochMs: number): number {
    return Math.floor((epochMs - this.baseMs) / TICK_MS);
  }

  /** The characters of the user ids held (both generations, like `size`). */
  get idChars(): number {
    let n = 0;
    for (const generation of [this.current, this.previous]) for (const users of generation.values()) for (const userId of users.keys()) n += userId.length;
    return n;
  }

  /** Bumped by every `forget` and `clear`. */
  get epoch(): number {
    return this.epochValue;
  }

  /**
   * Whether erasures are being followed (the follower reads `user.sources`). Until
   * then, and while it is down, nothing is cached: every call's pair is written.
   */
  get following(): boolean {
    return this.followingValue;
  }

  /**
   * NOTE: a change bumps the epoch: a pair handed out before the follower started
   * reading may have been erased before the point it reads from, so it is not cached.
   */
  setFollowing(following: boolean): void {
    if (following === this.followingValue) return;
    this.clear();
    this.followingValue = following;
  }

  /** The pairs held (both generations; a pair in both counts twice). */
  get size(): number {
    let n = 0;
    for (const generation of [this.current, this.previous]) for (const users of generation.values()) n += users.size;
    return n;
  }

  /**
   * Whether a `seen` record must be written for this pair: it is neither cached nor
   * pending. Returns the pending pair to report back when one must be written (it is
   * then pending), else undefined.
   */
  claim(userId: string, sourceId: string): PendingPair | undefined {
    const users = this.current.get(sourceId);
    if (users?.has(userId) === true) {
      users.set(userId, this.tickAt(this.nowMs()));
      return undefined;
    }
    if (this.previous.get(sourceId)?.has(userId) === true) {
      this.insert(userId, sourceId, this.tickAt(this.nowMs()));
      return undefined;
    }
    const pending = this.pending.get(sourceId);
    if (pending?.has(userId) === true) return undefined;
    if (pending === undefined) this.pending.set(sourceId, new Map([[userId, this.epochValue]]));
    else pending.set(userId, this.epochValue);
    return { userId, sourceId, epoch: this.epochValue };
  }

  /** The records of these pairs are acknowledged: cache them, unless a user was forgotten since. */
  acknowledged(pairs: readonly PendingPair[]): void {
    for (const pair of pairs) {
      this.settle(pair);
      if (pair.epoch === this.epochValue && this.followingValue) this.insert(pair.userId, pair.sourceId, NOT_FOUND);
    }
  }

  /** The records of these pairs were not written (the batch failed): they are handed out again. */
  abandoned(pairs: readonly PendingPair[]): void {
    for (const pair of pairs) this.settle(pair);
  }

  /** Ends the pair's pending state, unless a forget ended it and it was handed out again since. */
  private settle(pair: PendingPair): void {
    const users = this.pending.get(pair.sourceId);
    if (users === undefined || users.get(pair.userId) !== pair.epoch) return;
    users.delete(pair.userId);
    if (users.size === 0) this.pending.delete(pair.sourceId);
  }

  /**
   * Drops the user's pairs, except those of `keep` (the sources the state still has).
   * Returns the dropped pairs that a call found at or after tick `foundSince`: calls
   * that wrote nothing because of them, to be written again.
   */
  forget(userId: string, keep: readonly string[] = [], foundSince = Infinity): { userId: string; sourceId: string }[] {
    this.epochValue += 1;
    const used = new Set<string>();
    for (const generation of [this.current, this.previous]) {
      for (const [sourceId, users] of generation) {
        if (keep.includes(sourceId)) continue;
        const at = users.get(userId);
        if (at === undefined) continue;
        if (at !== NOT_FOUND && at >= foundSince) used.add(sourceId);
        users.delete(userId);
      }
    }
    // NOTE: a pair in flight may have been written before the deletion and erased by
    // it: the next call hands it out again instead of finding it pending.
    for (const [sourceId, users] of this.pending) if (!keep.includes(sourceId)) users.delete(userId);
    return [...used].map((sourceId) => ({ userId, sourceId }));
  }

  clear(): void {
    this.epochValue += 1;
    this.current = new Map();
    this.previous = new Map();
    this.count = 0;
    this.chars = 0;
  }

  private insert(userId: string, sourceId: string, tick: number): void {
    if (userId.length > this.generationChars) return;
    if (this.count >= this.generationSize || this.chars + userId.length > this.generationChars) {
      this.previous = this.current;
      this.current = new Map();
      this.count = 0;
      this.chars = 0;
    }
    let users = this.current.get(sourceId);
    if (users === undefined) this.current.set(sourceId, (users = new Map()));
    if (!users.has(userId)) {
      this.count += 1;
      this.chars += userId.length;
    }
    users.set(userId, tick);
  }
}
