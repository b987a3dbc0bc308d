// A check of @platformatic/kafka's metadata before each send (see checkSendMetadata),
// built on the producer's public API only: a copy of the daemon's
// src/kafka/platformatic-send-guard.ts, so that this package builds alone and checks its
// sends as the daemon's producers do. test/unit/kafka/platformatic-client.test.ts, in the
// repository, runs the same cases on both, and test/unit/client/send-guard-agreement.test.ts
// compares the two: change both together.

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
 * NOTE: @platformatic/kafka 2.12's producer takes each topic of a send from its metadata
 * without checking that it is there (upstream platformatic/kafka#109, #69). During a
 * broker restart it read an answer that lacked a topic: a TypeError thrown inside a
 * socket callback, an uncaught exception that ended the router (full chaos profile).
 * One way the library comes to such an answer: a lookup that asks the broker only for
 * the topics whose cached entry expired (its `metadataMaxAge`, 5 s by default), while a
 * concurrent stale-metadata answer drops the cache (clearMetadata), answers the topics
 * it did not ask for as undefined. This check asks the producer's public `metadata()`
 * for the send's topics and reads the answer itself; the send then reads the same
 * cached entries: the library answers a lookup from its cache while every entry asked
 * for is younger than its `metadataMaxAge`, and with LIBRARY_METADATA_MAX_AGE_MS no
 * entry expires during a send, so each lookup of the send is answered from the checked
 * cache or, once the cache was dropped, asks the broker for every topic of the send (a
 * partial lookup is never made). The check asks the broker every METADATA_REFRESH_MS,
 * as the library did.
 *
 * NOTE: the window that remains, which the public API cannot close: within a send the
 * library asks the broker again, and reads that answer unchecked, (1) after a produce
 * request failed on its connection (it retries with fresh metadata), (2) after a
 * stale-metadata answer (NOT_LEADER_OR_FOLLOWER: it drops its cache and asks again),
 * (3) when its cache was dropped between this check and the send's lookup. Each asks
 * for every topic of the send, so a crash there needs the broker itself to answer a
 * topic it was asked for without its partitions and without an error code (the library
 * turns an error code into a retriable error), which the Kafka protocol does not do.
 * Turning the library's retries off (`retries: 0`) would close 1 and 2 but also end the
 * retries of its transaction requests and connections; not done (the repository's docs/kafka.md#the-producers-metadata-check).
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
