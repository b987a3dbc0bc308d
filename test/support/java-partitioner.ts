// The Java client's default partitioner for keyed records (and kafkajs's, which copied
// it): murmur2 of the key's bytes, sign bit masked, modulo the partitions. Written out
// here from Kafka's Utils.murmur2 as an oracle independent of any client under test;
// test/unit/kafka/key-partition.test.ts checks it against the Java client's own vectors.

/** Kafka's Utils.murmur2 (seed 0x9747b28c), as a signed 32-bit integer. */
export function javaMurmur2(data: Buffer): number {
  const length = data.length;
  const m = 0x5bd1e995;
  const r = 24;
  let h = (0x9747b28c ^ length) | 0;
  const length4 = length >> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4]! & 0xff) | ((data[i4 + 1]! & 0xff) << 8) | ((data[i4 + 2]! & 0xff) << 16) | ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length4 * 4;
  const rest = length % 4;
  if (rest === 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition the Java client's default partitioner gives a keyed record. */
export function javaPartition(key: Buffer, partitions: number): number {
  return (javaMurmur2(key) & 0x7fffffff) % partitions;
}
