// Unknown keys and unknown ids: name the key and, where it looks like a typo, the one
// that was meant (an edit distance of at most 2, or the same letters in another case).

import type { Problem } from './check.js';

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

export function unknownKeyMessage(key: string, known: readonly string[]): string {
  const close = known.find((k) => k.toLowerCase() === key.toLowerCase() || editDistance(k, key) <= 2);
  const hint = close !== undefined ? `did you mean "${close}"?` : `allowed here: ${known.join(', ')}`;
  return `unknown key ${JSON.stringify(key)}; ${hint}`;
}

export function unknownKeyProblems(value: Record<string, unknown>, known: readonly string[]): Problem[] {
  return Object.keys(value)
    .filter((k) => !known.includes(k))
    .map((k) => ({ path: [k], message: unknownKeyMessage(k, known) }));
}

/** The known name `name` is most likely a typo of, if any. */
export function closest(name: string, known: readonly string[]): string | undefined {
  return known.find((k) => k.toLowerCase() === name.toLowerCase() || editDistance(k, name) <= 2);
}
