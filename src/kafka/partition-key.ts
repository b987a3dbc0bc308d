// The one spelling of a partition as a map key, everywhere in the port and its roles:
// `<partition>:<topic>` (topic names hold no `:`, so the split is exact).

/** Keys made before, by topic and partition, not built anew per lookup (docs/benchmarks.md#figures-behind-the-code); afresh past KEYED_TOPICS topics. */
const keys = new Map<string, string[]>();
const KEYED_TOPICS = 20_000;

export function partitionKey(topic: string, partition: number): string {
  let ofTopic = keys.get(topic);
  if (ofTopic === undefined) {
    if (keys.size >= KEYED_TOPICS) keys.clear();
    keys.set(topic, (ofTopic = []));
  }
  return (ofTopic[partition] ??= `${partition}:${topic}`);
}

/** `entries` by topic, each topic's in their order, as `{ topic, partitions }` (a request's shape). */
export function byTopic<T extends { topic: string }, P>(entries: Iterable<T>, partitionOf: (entry: T) => P): { topic: string; partitions: P[] }[] {
  const topics = new Map<string, P[]>();
  for (const e of entries) {
    const list = topics.get(e.topic);
    if (list === undefined) topics.set(e.topic, [partitionOf(e)]);
    else list.push(partitionOf(e));
  }
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}

export function splitPartitionKey(key: string): { topic: string; partition: number } {
  const colon = key.indexOf(':');
  return { topic: key.slice(colon + 1), partition: Number(key.slice(0, colon)) };
}
