import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyHeaderDecodeFix, knowsHeaderDecoding, readHeaderMap } from '../../../src/kafka/header-decode-fix.js';

const require = createRequire(import.meta.url);
const protocol = dirname(require.resolve('kafkajs/src/protocol/decoder.js'));
const source = (path: string) => readFileSync(join(protocol, 'recordBatch', path), 'utf8');

interface KafkajsEncoder {
  writeVarInt(value: number): KafkajsEncoder;
  writeVarIntString(value: string | null): KafkajsEncoder;
  writeVarIntBytes(value: Buffer | null): KafkajsEncoder;
  buffer: Buffer;
}
interface KafkajsDecoder {
  readVarInt(): number;
  readVarIntString(): string | null;
  readVarIntBytes(): Buffer | null;
  readVarIntArray(reader: (decoder: KafkajsDecoder) => unknown): unknown;
}
const Encoder = require('kafkajs/src/protocol/encoder.js') as new () => KafkajsEncoder;
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => KafkajsDecoder;
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as { RecordBatch: (batch: object) => Promise<{ buffer: Buffer }> };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (record: object) => unknown;
const decodeRecordBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (decoder: KafkajsDecoder) => Promise<{ records: { headers: Record<string, unknown> }[] }>;

type Header = [key: string, value: string | null];

/** A header list as a record carries it: the count, then each key and value. */
function encodeHeaders(headers: readonly Header[]): Buffer {
  const encoder = new Encoder().writeVarInt(headers.length);
  for (const [key, value] of headers) encoder.writeVarIntString(key).writeVarIntBytes(value === null ? null : Buffer.from(value));
  return encoder.buffer;
}

/** The map kafkajs 2.2.4 builds from the list: its reducer as record/v0/decoder.js writes it. */
function spreadHeaders(list: Buffer): Record<string, unknown> {
  const decoder = new Decoder(list);
  const count = decoder.readVarInt();
  const pairs = Array.from({ length: count }, () => ({ key: decoder.readVarIntString() as string, value: decoder.readVarIntBytes() }));
  return pairs.reduce<Record<string, unknown>>(
    (obj, { key, value }) => ({
      ...obj,
      [key]: obj[key] === undefined ? value : Array.isArray(obj[key]) ? (obj[key] as unknown[]).concat([value]) : [obj[key], value],
    }),
    {},
  );
}

const LISTS: Record<string, Header[]> = {
  'no header': [],
  'the five delivery headers': [
    ['switchyard-destination-id', 'warehouse'],
    ['switchyard-attempt', '0'],
    ['switchyard-first-attempt-at', ''],
    ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
    ['source-id', 'web'],
  ],
  'a key met three times, apart': [
    ['a', '1'],
    ['b', '2'],
    ['a', '3'],
    ['a', '4'],
  ],
  'a header named __proto__, twice': [
    ['__proto__', 'p1'],
    ['x', 'y'],
    ['__proto__', 'p2'],
  ],
  'a header named as a method of Object.prototype': [['toString', 'v']],
  'integer-like keys, out of order, and an empty key': [
    ['2', 'two'],
    ['z', 'zed'],
    ['1', 'one'],
    ['', 'empty'],
  ],
  'a null value, then the same key again': [
    ['k', null],
    ['k', 'v'],
  ],
};

describe('the header decode fix for kafkajs', () => {
  it('knows the pinned record decoder and header reader, and no other shape', () => {
    const recordDecoder = source('record/v0/decoder.js');
    const headerReader = source('header/v0/decoder.js');
    expect(knowsHeaderDecoding(recordDecoder, headerReader)).toBe(true);
    expect(knowsHeaderDecoding(recordDecoder.replace('...obj,', '...obj, extra: 1,'), headerReader)).toBe(false);
    expect(knowsHeaderDecoding(recordDecoder, headerReader.replace('readVarIntString', 'readVarIntBytes'))).toBe(false);
  });

  it('is the only reader of header lists in kafkajs (so the list is only ever reduced at once)', () => {
    const files = (readdirSync(protocol, { recursive: true }) as string[]).filter((file) => file.endsWith('.js') && !file.endsWith('.spec.js'));
    const readers = files.filter((file) => readFileSync(join(protocol, file), 'utf8').includes('readVarIntArray(HeaderDecoder)'));
    expect(readers).toEqual([join('recordBatch', 'record', 'v0', 'decoder.js')]);
  });

  for (const [name, headers] of Object.entries(LISTS)) {
    it(`reads the map kafkajs builds: ${name}`, () => {
      const list = encodeHeaders(headers);
      const expected = spreadHeaders(list);
      const map = readHeaderMap(new Decoder(list));
      expect(map).toEqual(expected);
      expect(Object.keys(map)).toEqual(Object.keys(expected));
      expect(Object.getPrototypeOf(map)).toBe(Object.prototype);
      for (const key of Object.keys(expected)) expect(Object.getOwnPropertyDescriptor(map, key)).toEqual(Object.getOwnPropertyDescriptor(expected, key));
    });
  }

  it('keeps __proto__ an own header and the map a plain object', () => {
    const map = readHeaderMap(new Decoder(encodeHeaders(LISTS['a header named __proto__, twice']!)));
    expect(Object.hasOwn(map, '__proto__')).toBe(true);
    // As in kafkajs: the first read of map.__proto__ meets the prototype, which joins the values.
    expect(Object.getOwnPropertyDescriptor(map, '__proto__')?.value).toEqual([Object.prototype, Buffer.from('p1'), Buffer.from('p2')]);
    expect(Object.getPrototypeOf(map)).toBe(Object.prototype);
  });

  it('gives kafkajs records the same headers once applied, and leaves every other list as it was', async () => {
    applyHeaderDecodeFix();
    const headers = { 'switchyard-destination-id': 'warehouse', 'switchyard-attempt': '2', repeated: ['one', 'two'], empty: '' };
    const records = [0, 1, 2].map((i) => Record({ offsetDelta: i, timestampDelta: i, key: Buffer.from(`user-${i}`), value: Buffer.from(`{"n":${i}}`), headers }));
    const batch = await RecordBatch({ firstOffset: '41', firstTimestamp: Date.now(), maxTimestamp: Date.now(), records });
    const decoded = await decodeRecordBatch(new Decoder(batch.buffer));
    expect(decoded.records).toHaveLength(3);
    for (const record of decoded.records) {
      expect(record.headers).toEqual({
        'switchyard-destination-id': Buffer.from('warehouse'),
        'switchyard-attempt': Buffer.from('2'),
        repeated: [Buffer.from('one'), Buffer.from('two')],
        empty: Buffer.alloc(0),
      });
    }
    const numbers = new Encoder().writeVarInt(3).writeVarInt(7).writeVarInt(8).writeVarInt(9).buffer;
    expect(new Decoder(numbers).readVarIntArray((decoder) => decoder.readVarInt())).toEqual([7, 8, 9]);
  });
});
