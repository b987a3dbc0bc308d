// The one spelling of a partition as a map key, everywhere in the port and its roles:
// `<partition>:<topic>` (topic names hold no `:`, so the split is exact).

export function partitionKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
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
