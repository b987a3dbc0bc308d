// JSONata built-in functions that shaping replaces (docs/webhooks.md#time-and-size-bounds),
// registered on each compiled expression under the same names.
//   $sort: JSONata's own is a merge sort that copies the rest of a list at each element
//     it takes (quadratic: a list of a few thousand strings took a second inside one
//     evaluation step, docs/benchmarks.md#figures-behind-the-code); this one
//     keeps its order and its errors, in n·log n (the native stable sort when no
//     function is given).
//   $eval: would compile a new expression at run time, outside every bound here.

/** A JSONata error as its evaluator throws them: a code, and the argument's index. */
interface JsonataThrown {
  code: string;
  index?: number;
  message?: string;
  stack?: string;
}

type Comparator = (a: unknown, b: unknown) => unknown;

/** `$sort(array, function?)`: ascending, stable; `function(a, b)` true means b goes first. */
export async function sort(list: unknown[] | undefined, comparator?: Comparator): Promise<unknown[] | undefined> {
  if (list === undefined) return undefined;
  if (list.length <= 1) return list;
  if (comparator === undefined) {
    const numbers = list.every((item) => typeof item === 'number');
    if (!numbers && !list.every((item) => typeof item === 'string')) throw { code: 'D3070', index: 1, stack: new Error().stack } satisfies JsonataThrown;
    return [...list].sort((a, b) => ((a as number | string) > (b as number | string) ? 1 : (a as number | string) < (b as number | string) ? -1 : 0));
  }
  // Bottom-up merge sort: ceil(log2 n) passes of merges, each element copied once a pass.
  let from = [...list];
  let to = new Array<unknown>(from.length);
  for (let width = 1; width < from.length; width *= 2) {
    for (let start = 0; start < from.length; start += 2 * width) {
      const middle = Math.min(start + width, from.length);
      const end = Math.min(start + 2 * width, from.length);
      let left = start;
      let right = middle;
      let out = start;
      while (left < middle && right < end) {
        // As JSONata's: a true answer takes the right one first; equal ones keep their order.
        if (await comparator(from[left], from[right])) to[out++] = from[right++];
        else to[out++] = from[left++];
      }
      while (left < middle) to[out++] = from[left++];
      while (right < end) to[out++] = from[right++];
    }
    [from, to] = [to, from];
  }
  return from;
}

/** `$eval`: refused, with what to do instead. */
export function evalRefused(): never {
  throw { code: 'eval', message: '$eval is not available in shaping expressions: write the expression in filter or transform itself' } satisfies JsonataThrown;
}
