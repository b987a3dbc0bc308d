// The one spelling of a partition as a map key, everywhere in the port and its roles:
// `<partition>:<topic>` (topic names hold no `:`, so the split is exact).

export function partitionKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}

export function splitPartitionKey(key: string): { topic: string; partition: number } {
  const colon = key.indexOf(':');
  return { topic: key.slice(colon + 1), partition: Number(key.slice(0, colon)) };
}
