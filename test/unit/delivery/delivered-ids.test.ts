import { describe, expect, it } from 'vitest';
import { DeliveredIds } from '../../../src/delivery/delivered-ids.js';

describe('DeliveredIds', () => {
  it('remembers a messageId per destination', () => {
    const ids = new DeliveredIds(10);
    ids.add('a', 'm-1');
    expect(ids.has('a', 'm-1')).toBe(true);
    expect(ids.has('b', 'm-1')).toBe(false);
    expect(ids.of('a').has('m-1')).toBe(true);
    ids.of('b').add('m-1');
    expect(ids.has('b', 'm-1')).toBe(true);
  });

  it('keeps the newest `capacity` over all destinations, the oldest going first; one taken again is the newest', () => {
    const ids = new DeliveredIds(3);
    ids.add('a', '1');
    ids.add('b', '2');
    ids.add('a', '3');
    ids.add('a', '1'); // again: now the newest
    ids.add('b', '4'); // evicts b/2, the oldest
    expect([ids.has('a', '1'), ids.has('b', '2'), ids.has('a', '3'), ids.has('b', '4')]).toEqual([true, false, true, true]);
    expect(ids.size).toBe(3);
  });
});
