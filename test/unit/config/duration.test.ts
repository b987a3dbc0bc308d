import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../../src/config/duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['0ms', 0],
    ['10s', 10_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['1m', 60_000],
    ['2.5m', 150_000],
    ['4h', 14_400_000],
    ['30d', 2_592_000_000],
    ['010s', 10_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    [''],
    ['10'],
    ['5'],
    ['s'],
    ['10 s'],
    [' 10s'],
    ['10s '],
    ['-1s'],
    ['+1s'],
    ['.5s'],
    ['1.s'],
    ['1e3ms'],
    ['10S'],
    ['10sec'],
    ['1w'],
    ['1h30m'],
    ['0.5ms'],
    ['1.0001s'],
    ['99999999999999999d'],
  ])('%j is rejected', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [500, '500ms'],
    [1_500, '1500ms'],
    [5_000, '5s'],
    [90_000, '90s'],
    [600_000, '10m'],
    [3_600_000, '1h'],
    [14_400_000, '4h'],
    [2_592_000_000, '30d'],
    [0, '0ms'],
    [-5, '-5ms'],
  ])('%d ms prints as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([1, 999, 1_000, 61_000, 86_400_000, 90_061_001])('%d ms survives a round trip', (ms) => {
    expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});
