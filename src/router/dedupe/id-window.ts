// The ids a router partition remembers (docs/kafka.md#copies-of-a-call): 64-bit hashes in
// a few generations of open-addressing tables, each generation a slice of the window.
// An id is a copy when a generation that can still hold ids of the window holds it; a
// generation is dropped whole once its newest id left the window, so an id is remembered
// for at least the window and at most a generation's slice longer. Pure: the time comes in.
//
// Memory: 8 bytes a slot, tables grown at three quarters full, so 11–21 bytes an id
// (docs/operations.md#memory gives the figures per rate).

/** Generations a window is cut into: an id stays at most a quarter of the window too long. */
const GENERATIONS = 4;
const FIRST_SLOTS = 1 << 10;

/** A 64-bit hash of an id, as two unsigned 32-bit halves. */
export interface IdHash {
  hi: number;
  lo: number;
}

/**
 * The hash of a source's messageId (two 32-bit multiplicative hashes mixed, as cyrb53
 * does). NOTE: not cryptographic: two ids with the same hash are taken for copies, about
 * once in 10^12 pairs remembered at once; a sender who could pick colliding ids for other
 * senders' calls would have to know their messageIds in advance.
 */
export function hashId(source: string, messageId: string): IdHash {
  let h1 = 0xdeadbeef ^ source.length;
  let h2 = 0x41c6ce57 ^ messageId.length;
  // NOTE: the two loops written out, not a helper closure: this runs once per routed call.
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ 0x1f, 2654435761);
  for (let i = 0; i < messageId.length; i++) {
    const c = messageId.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  // NOTE: the low bit set, so that (0, 0) marks an empty slot.
  return { hi: h1 >>> 0, lo: (h2 | 1) >>> 0 };
}

/** A set of id hashes: open addressing in one typed array, grown at three quarters full. */
export class IdSet {
  private slots = new Uint32Array(FIRST_SLOTS * 2);
  count = 0;

  get bytes(): number {
    return this.slots.byteLength;
  }

  has(hash: IdHash): boolean {
    return this.slotOf(this.slots, hash) < 0;
  }

  /** Adds `hash`; false when it was there already. */
  add(hash: IdHash): boolean {
    const slot = this.slotOf(this.slots, hash);
    if (slot < 0) return false;
    this.slots[slot] = hash.hi;
    this.slots[slot + 1] = hash.lo;
    this.count += 1;
    if (this.count * 4 > (this.slots.length / 2) * 3) this.grow();
    return true;
  }

  /** The index of the empty slot where `hash` goes, or -1 when it is there. */
  private slotOf(slots: Uint32Array, hash: IdHash): number {
    const mask = slots.length / 2 - 1;
    let i = (hash.hi ^ Math.imul(hash.lo, 0x9e3779b1)) & mask;
    for (;;) {
      const at = i * 2;
      const lo = slots[at + 1]!;
      if (lo === 0) return at;
      if (lo === hash.lo && slots[at] === hash.hi) return -1;
      i = (i + 1) & mask;
    }
  }

  private grow(): void {
    const old = this.slots;
    const slots = new Uint32Array(old.length * 2);
    for (let at = 0; at < old.length; at += 2) {
      if (old[at + 1] === 0) continue;
      const hash = { hi: old[at]!, lo: old[at + 1]! };
      const to = this.slotOf(slots, hash);
      slots[to] = hash.hi;
      slots[to + 1] = hash.lo;
    }
    this.slots = slots;
  }
}

/** One generation: ids first seen from `fromMs`, the newest at `untilMs`. */
class Generation extends IdSet {
  untilMs: number;

  constructor(readonly fromMs: number) {
    super();
    this.untilMs = fromMs;
  }

  /** Adds `hash` seen at `atMs`; false when it was there already. */
  addAt(hash: IdHash, atMs: number): boolean {
    if (atMs > this.untilMs) this.untilMs = atMs;
    return this.add(hash);
  }
}

/** The ids of one partition seen within `windowMs`. */
export class IdWindow {
  private generations: Generation[] = [];
  private readonly sliceMs: number;

  constructor(private readonly windowMs: number) {
    this.sliceMs = Math.max(1, Math.ceil(windowMs / GENERATIONS));
  }

  /** Whether `hash` was added within the window before `atMs`. */
  has(hash: IdHash, atMs: number): boolean {
    const since = atMs - this.windowMs;
    for (const generation of this.generations) if (generation.untilMs >= since && generation.has(hash)) return true;
    return false;
  }

  /** Remembers `hash` as seen at `atMs` (times may go back a little: such an id joins the newest generation). */
  add(hash: IdHash, atMs: number): void {
    this.forgetBefore(atMs - this.windowMs);
    let newest = this.generations[this.generations.length - 1];
    if (newest === undefined || atMs >= newest.fromMs + this.sliceMs) {
      newest = new Generation(atMs);
      this.generations.push(newest);
    }
    newest.addAt(hash, atMs);
  }

  /** Ids remembered (an id added twice in two generations counts twice). */
  get size(): number {
    return this.generations.reduce((n, g) => n + g.count, 0);
  }

  get bytes(): number {
    return this.generations.reduce((n, g) => n + g.bytes, 0);
  }

  private forgetBefore(sinceMs: number): void {
    while (this.generations.length > 0 && this.generations[0]!.untilMs < sinceMs) this.generations.shift();
  }
}
