// A check of @platformatic/kafka's metadata before each send (see checkSendMetadata),
// built on the producer's public API only. The client library has its own copy
// (packages/client/src/send-guard.ts), so that it builds alone;
// test/unit/kafka/platformatic-client.test.ts runs the same cases on both.

/** The part of a metadata answer a send reads: each topic's partitions and their leaders. */
export interface SendMetadata {
  topics: Map<string, { partitionsCount: number; partitions: ({ leader: number } | undefined)[] } | undefined>;
}

/** What the check uses of a producer: the public `metadata()` and `clearMetadata()` of @platformatic/kafka's clients. */
export interface MetadataClient {
  metadata(options: { topics: string[]; metadataMaxAge?: number }): Promise<SendMetadata>;
  clearMetadata(): void;
}

/**
 * How old the cached metadata of a send's topics may be when the check reads it; older
 * entries are asked of the broker again (the library's own default, 5 s).
 */
export const METADATA_REFRESH_MS = 5_000;

/**
 * The producer option `metadataMaxAge` of every checked producer: how long the library
 * itself keeps a topic's cached entry before it asks again on its own (1 h: longer than
 * any send takes; checkSendMetadata's NOTE says why).
 */
export const LIBRARY_METADATA_MAX_AGE_MS = 60 * 60_000;

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
 * Resolves when the cluster metadata that a send of `topics` is about to read names each
 * topic with a leader for every partition; otherwise drops the cached metadata (the next
 * try asks the broker again) and rejects with a retriable error. Call it right before
 * `producer.send` (or a transaction's send), on a producer made with
 * `metadataMaxAge: LIBRARY_METADATA_MAX_AGE_MS`.
 *
 * NOTE: @platformatic/kafka 2.12's producer reads each topic of a send from its metadata
 * unchecked (upstream platformatic/kafka#109): during a broker restart an answer that
 * lacked a topic threw a TypeError inside a socket callback, which ended the router.
 * With LIBRARY_METADATA_MAX_AGE_MS no cached entry expires during a send, so the send
 * reads the entries checked here, or asks for all its topics once the cache was
 * dropped. What stays unchecked (the library's own retries within a send) is in
 * docs/kafka.md#the-producers-metadata-check.
 */
export async function checkSendMetadata(producer: MetadataClient, topics: readonly string[]): Promise<void> {
  // NOTE: a copy: the library sorts the array it is given.
  const metadata = await producer.metadata({ topics: [...topics], metadataMaxAge: METADATA_REFRESH_MS });
  const unusable = unusableTopics(topics, metadata);
  if (unusable.length === 0) return;
  producer.clearMetadata();
  throw Object.assign(new Error(`the cluster metadata has no partition leaders for ${unusable.join(', ')} (a broker restarting?); sent again once it has`), {
    canRetry: true,
    retriable: true,
  });
}

/** The distinct topics of a send's messages, in order. */
export function topicsOf(messages: readonly { topic: string }[]): string[] {
  return [...new Set(messages.map((message) => message.topic))];
}
