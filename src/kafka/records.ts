// The records the port hands to roles and takes from them: Switchyard's own types,
// so that no role needs the client library's (a later swap of client library stays in src/kafka/).

/** Record headers as read or written: values are text or bytes (read: text where they are UTF-8, bytes where not), repeated names give arrays. */
export interface RecordHeaders {
  [name: string]: Buffer | string | (Buffer | string)[] | undefined;
}

/** One record read from a topic. */
export interface InboundRecord {
  topic: string;
  partition: number;
  /** The record's offset, as a decimal string (offsets outgrow a double's exact range). */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeaders | undefined;
  /** The record's Kafka timestamp, epoch ms as a decimal string. */
  timestamp: string;
}

/** One record to write. Without `partition`, the key's hash picks it (murmur2, as the Java client's default partitioner). */
export interface OutboundRecord {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  headers?: RecordHeaders;
  partition?: number;
  /** Epoch ms as a decimal string; the broker's time of the send when absent. */
  timestamp?: string;
}

/** The records of one send that go to one topic, in order. */
export interface TopicRecords {
  topic: string;
  messages: OutboundRecord[];
  /** The records' size by `recordBytes`, when the writer counted it already (a SendBuffer does). */
  bytes?: number;
}

/** A record's size as the broker counts it, near enough: key, value and headers, plus framing. */
export function recordBytes(key: Buffer | string | null | undefined, value: Buffer | string | null, headers: RecordHeaders | undefined): number {
  let size = 24 + byteLength(key) + byteLength(value);
  if (headers) {
    for (const name in headers) {
      const header = headers[name];
      const values = Array.isArray(header) ? header : [header];
      for (const v of values) {
        if (v === undefined) continue;
        size += 4 + name.length + byteLength(v);
      }
    }
  }
  return size;
}

function byteLength(data: Buffer | string | null | undefined): number {
  if (data === null || data === undefined) return 0;
  return typeof data === 'string' ? Buffer.byteLength(data) : data.length;
}
