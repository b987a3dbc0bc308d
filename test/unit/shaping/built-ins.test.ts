import jsonata from 'jsonata';
import { describe, expect, it } from 'vitest';
import { sort } from '../../../src/shaping/built-ins.js';

/** JSONata's own `$sort`, for the same answers. */
async function jsonataSort(list: unknown[], comparator?: string): Promise<unknown> {
  return jsonata(comparator === undefined ? '$sort($list)' : `$sort($list, ${comparator})`).evaluate({}, { list });
}

describe('$sort (shaping\'s)', () => {
  it.each<[string, unknown[]]>([
    ['numbers', [3, 1, 2, 1.5, -4, 0]],
    ['strings by UTF-16 units', ['b', 'a', 'B', 'é', 'e', 'Z', '']],
    ['one item', [7]],
  ])('%s: as JSONata sorts them', async (_name, list) => {
    expect(await sort(list)).toEqual(await jsonataSort(list));
  });

  it('keeps the order of equal items with a function, as JSONata does', async () => {
    const list = Array.from({ length: 37 }, (_, i) => ({ k: (i * 7) % 5, i }));
    const theirs = await jsonata('$sort($list, function($a, $b) { $a.k > $b.k })').evaluate({}, { list });
    expect(theirs).toEqual(await jsonataSort(list, 'function($a, $b) { $a.k > $b.k }'));
    const byHand = await sort(list, (a, b) => (a as { k: number }).k > (b as { k: number }).k);
    expect(byHand).toEqual(theirs);
  });

  it('refuses a mixed list without a function (D3070), and passes undefined through', async () => {
    await expect(sort([1, 'a'])).rejects.toMatchObject({ code: 'D3070' });
    expect(await sort(undefined)).toBeUndefined();
  });

  it('sorts 4,000 strings without the quadratic copying', async () => {
    const words = Array.from({ length: 4_000 }, (_, i) => `w${(i * 7_919) % 4_001}`);
    const started = performance.now();
    expect(await sort(words, (a, b) => (a as string) > (b as string))).toEqual([...words].sort());
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
