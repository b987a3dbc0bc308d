import { describe, expect, it } from 'vitest';
import { commitDelay } from '../../../src/kafka/partition-stream.js';

describe('commit delay of a partition stream', () => {
  it.each([
    [0, 5],
    [1, 5],
    [50, 5],
    [200, 20],
    [1_000, 100],
    [3_000, 100],
  ])('after a commit of %i partitions the next waits %i ms', (partitions, expected) => {
    expect(commitDelay(partitions)).toBe(expected);
  });

  it('never waits less than the base; more partitions add up to 100 ms', () => {
    expect(commitDelay(0, 20)).toBe(20);
    expect(commitDelay(300, 20)).toBe(30);
    expect(commitDelay(5_000, 20)).toBe(100);
    expect(commitDelay(5_000, 500)).toBe(500);
  });
});
