// A seeded pseudo-random source: every random choice of a chaos run (load mix, fault
// instants, receiver failures) comes from one seed, printed in the report, so a run
// that found something can be repeated with `--seed`.

export interface Random {
  readonly seed: number;
  /** In [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** One item, each as likely as its weight. */
  weighted<T>(items: readonly (readonly [T, number])[]): T;
  /** `chars` lowercase hex digits. */
  hex(chars: number): string;
  /** An independent source derived from this one (so adding a draw here does not shift another stream). */
  fork(): Random;
}

/** mulberry32: tiny, fast and good enough for choosing test inputs (not for secrets). */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random: Random = {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (probability) => next() < probability,
    pick: (items) => {
      if (items.length === 0) throw new RangeError('pick: no items');
      return items[Math.floor(next() * items.length)]!;
    },
    weighted: (items) => {
      const total = items.reduce((sum, [, weight]) => sum + weight, 0);
      let at = next() * total;
      for (const [item, weight] of items) {
        at -= weight;
        if (at < 0) return item;
      }
      return items[items.length - 1]![0];
    },
    hex: (chars) => {
      let out = '';
      while (out.length < chars) out += Math.floor(next() * 0x100000000).toString(16).padStart(8, '0');
      return out.slice(0, chars);
    },
    fork: () => createRandom(Math.floor(next() * 0x100000000)),
  };
  return random;
}

/** A seed for a run that was given none. */
export function freshSeed(): number {
  return Math.floor(Math.random() * 0x100000000);
}
