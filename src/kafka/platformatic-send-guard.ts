// A guard for @platformatic/kafka's producer (see guardSendMetadata). The client
// library has its own copy (packages/client/src/send-guard.ts), so that it builds
// alone; test/unit/kafka/platformatic-client.test.ts runs the same cases on both.

/** The part of a metadata answer a send reads: each topic's partitions and their leaders. */
interface SendMetadata {
  topics: Map<string, { partitionsCount: number; partitions: ({ leader: number } | undefined)[] } | undefined>;
}
type MetadataLookup = (options: { topics?: string[] }, callback: (error: Error | null, metadata?: SendMetadata) => void) => void;

/** The topics of a metadata answer a send cannot use: missing, without partitions, or a partition without a leader. */
export function unusableTopics(topics: readonly string[], metadata: SendMetadata): string[] {
  return topics.filter((topic) => {
    const known = metadata.topics.get(topic);
    if (known === undefined || !(known.partitionsCount > 0)) return true;
    for (let p = 0; p < known.partitionsCount; p++) if (!(Number(known.partitions[p]?.leader) >= 0)) return true;
    return false;
  });
}

/**
 * NOTE: @platformatic/kafka 2.12's producer takes each topic of a send from its metadata
 * answer unchecked: during a broker restart an answer lacking a topic (or its leaders)
 * threw a TypeError inside a callback, an uncaught exception that ended the router
 * (chaos harness; platformatic/kafka#109). This wraps the client's metadata lookup,
 * found by its symbol's name: such an answer fails the send with a retriable error and
 * drops the cached metadata. Returns whether the client had the lookup.
 */
export function guardSendMetadata(client: object): boolean {
  let symbol: symbol | undefined;
  for (let proto: object | null = client; proto !== null && symbol === undefined; proto = Object.getPrototypeOf(proto) as object | null) {
    symbol = Object.getOwnPropertySymbols(proto).find((s) => s.description === 'plt.kafka.base.metadata');
  }
  const target = client as Record<symbol, unknown> & { clearMetadata?: () => void };
  const lookup = symbol === undefined ? undefined : target[symbol];
  if (symbol === undefined || typeof lookup !== 'function') return false;
  target[symbol] = function guardedMetadata(this: unknown, options: { topics?: string[] }, callback: Parameters<MetadataLookup>[1]) {
    (lookup as MetadataLookup).call(this, options, (error, metadata) => {
      // NOTE: the transactional producer also asks for metadata without naming topics.
      const unusable = error === null && metadata !== undefined ? unusableTopics(options.topics ?? [], metadata) : [];
      if (unusable.length === 0) {
        callback(error, metadata);
        return;
      }
      target.clearMetadata?.();
      callback(Object.assign(new Error(`the cluster metadata has no partition leaders for ${unusable.join(', ')} (a broker restarting?); sent again once it has`), { canRetry: true, retriable: true }));
    });
  };
  return true;
}
