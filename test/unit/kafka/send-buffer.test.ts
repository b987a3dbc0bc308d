import { describe, expect, it } from 'vitest';
import { recordBytes } from '../../../src/kafka/records.js';
import { SendBuffer } from '../../../src/kafka/send-buffer.js';
import { invalidRecord } from '../../../src/router/invalid-records.js';
import { record } from '../router/fixtures.js';

describe('SendBuffer', () => {
  const message = { key: null, value: Buffer.from('x') };

  it('groups records per topic in arrival order', () => {
    const batch = new SendBuffer(1_000);
    batch.add('a', { ...message, value: Buffer.from('1') }, 10);
    batch.add('b', { ...message, value: Buffer.from('2') }, 10);
    batch.add('a', { ...message, value: Buffer.from('3') }, 10);
    expect(batch.size).toBe(3);
    expect(batch.topicRecords().map((t) => [t.topic, t.messages.map((m) => String(m.value))])).toEqual([
      ['a', ['1', '3']],
      ['b', ['2']],
    ]);
    batch.clear();
    expect(batch.size).toBe(0);
    expect(batch.topicRecords()).toEqual([]);
  });

  it('keeps every topic within its byte budget, but always takes a first record', () => {
    const batch = new SendBuffer(100);
    expect(batch.fits('a', 500)).toBe(true);
    batch.add('a', message, 60);
    expect(batch.fits('a', 40)).toBe(true);
    expect(batch.fits('a', 41)).toBe(false);
    expect(batch.fits('b', 100)).toBe(true);
  });

  it('estimates record sizes from key, value and headers', () => {
    expect(recordBytes(null, null, undefined)).toBe(24);
    expect(recordBytes(Buffer.from('key'), Buffer.from('value'), { h: 'é', b: Buffer.from('12'), r: ['1', '2'] })).toBe(
      24 + 3 + 5 + (4 + 1 + 2) + (4 + 1 + 2) + (4 + 1 + 1) * 2,
    );
  });
});

describe('invalidRecord', () => {
  it('keeps key, value, headers and timestamp, and adds (or replaces) the error header', () => {
    const original = record('{"broken', { key: 'k-1', headers: { 'source-id': 'web', error: 'old', other: Buffer.from('o') }, timestamp: '1700000000000' });
    const out = invalidRecord(original, 'call is not valid JSON');
    expect(out.key).toBe(original.key);
    expect(out.value).toBe(original.value);
    expect(out.timestamp).toBe('1700000000000');
    expect(Object.fromEntries(Object.entries(out.headers!).map(([k, v]) => [k, String(v)]))).toEqual({
      'source-id': 'web',
      error: 'call is not valid JSON',
      other: 'o',
    });
    expect(invalidRecord(record(null, { key: null }), 'e').value).toBeNull();
  });
});
