// NOTE: kafkajs 2.2.4 (pinned) turns each record's headers into a map by spreading the
// map built so far into a new object for each header (record/v0/decoder.js: `reduce`
// with `{ ...obj, [key]: … }`): with the five headers of a delivery record, five objects
// and fifteen copied properties per record, in every fetch of every kafkajs consumer.
// In the destinations bench that reducer alone was 1.5 µs of the deliverer's 15–28 µs of
// CPU per event, the largest single function (docs/architecture.md#two-kafka-clients-behind-the-port).
// The same map, built in one pass: same keys, values and key order; a header named twice
// or more gives an array, as kafkajs does; a header named `__proto__` stays an own key.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The part of kafkajs's protocol Decoder this fix reads with. */
interface ProtocolDecoder {
  readVarInt(): number;
  readVarIntString(): string | null;
  readVarIntBytes(): Buffer | null;
}

type HeaderMap = Record<string, unknown>;

/**
 * The record decoder's header reduce, as kafkajs 2.2.4 writes it (any spacing). Another
 * source is another kafkajs, left as it is.
 */
const SPREAD_HEADERS =
  /decoder\.readVarIntArray\(HeaderDecoder\)\.reduce\(\s*\(obj,\s*\{\s*key,\s*value\s*\}\)\s*=>\s*\(\{\s*\.\.\.obj,\s*\[key\]:\s*obj\[key\]\s*===\s*undefined\s*\?\s*value\s*:\s*Array\.isArray\(obj\[key\]\)\s*\?\s*obj\[key\]\.concat\(\[value\]\)\s*:\s*\[obj\[key\],\s*value\],?\s*\}\),\s*\{\}\s*\)/;

/** The header reader (header/v0/decoder.js) of kafkajs 2.2.4: the key as a string, then the value as bytes. */
const HEADER_READER = /^module\.exports\s*=\s*decoder\s*=>\s*\(\{\s*key:\s*decoder\.readVarIntString\(\),\s*value:\s*decoder\.readVarIntBytes\(\),?\s*\}\)\s*$/;

/**
 * Whether the record decoder's source reduces the headers exactly as the one this fix
 * replaces, and the header reader's reads what readHeaderMap reads.
 */
export function knowsHeaderDecoding(recordDecoder: string, headerReader: string): boolean {
  return SPREAD_HEADERS.test(recordDecoder) && HEADER_READER.test(headerReader.trim());
}

/**
 * Reads a record's headers (a varint count, then key and value of each) into the map
 * kafkajs's reducer builds: each key once, in the order first met; a value, or for a
 * key met again the array of its values. As in kafkajs, the value read so far is
 * `map[key]`, the prototype's included (a header named `toString` pairs with that
 * function, as it does there).
 */
export function readHeaderMap(decoder: ProtocolDecoder): HeaderMap {
  const count = decoder.readVarInt();
  const map: HeaderMap = {};
  for (let i = 0; i < count; i++) {
    const key = String(decoder.readVarIntString());
    const value = decoder.readVarIntBytes();
    const before = map[key];
    const after = before === undefined ? value : Array.isArray(before) ? before.concat([value]) : [before, value];
    if (key === '__proto__') Object.defineProperty(map, key, { value: after, enumerable: true, writable: true, configurable: true });
    else map[key] = after;
  }
  return map;
}

/**
 * What the header list is to its one reader: record/v0/decoder.js reduces it into `{}`
 * with the spread reducer at once, and here that reduce returns the map built already.
 */
class DecodedHeaders {
  constructor(private readonly map: HeaderMap) {}

  reduce(): HeaderMap {
    return this.map;
  }
}

type ReadVarIntArray = (this: ProtocolDecoder, reader: (decoder: ProtocolDecoder) => unknown) => unknown;

let applied = false;

/**
 * Has kafkajs's Decoder read a record's header list straight into its map; once per
 * process, only where the record decoder reduces the list as this fix knows (else
 * nothing changes). Every other list the Decoder reads is read as before.
 * NOTE: the record decoder holds the header reader and the Decoder class from its own
 * imports, so the change is on the Decoder's prototype, for that one reader.
 */
export function applyHeaderDecodeFix(): void {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  let headerReader: unknown;
  let prototype: { readVarIntArray?: ReadVarIntArray } | undefined;
  try {
    const source = (path: string) => readFileSync(require.resolve(`kafkajs/src/protocol/recordBatch/${path}`), 'utf8');
    if (!knowsHeaderDecoding(source('record/v0/decoder.js'), source('header/v0/decoder.js'))) return;
    headerReader = require('kafkajs/src/protocol/recordBatch/header/v0/decoder.js');
    prototype = (require('kafkajs/src/protocol/decoder.js') as { prototype?: { readVarIntArray?: ReadVarIntArray } }).prototype;
  } catch {
    return; // another kafkajs layout: left as it is
  }
  const original = prototype?.readVarIntArray;
  if (typeof headerReader !== 'function' || typeof original !== 'function') return;
  prototype!.readVarIntArray = function readVarIntArray(this: ProtocolDecoder, reader) {
    return reader === headerReader ? new DecodedHeaders(readHeaderMap(this)) : original.call(this, reader);
  };
}
