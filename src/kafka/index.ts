// The Kafka port: the only module of src/ that imports @platformatic/kafka. Roles use these.
export { CONSUMER_SESSION_TIMEOUT_MS, createKafka, isKafkaClientError } from './client.js';
export type { KafkaClient } from './client.js';
export * from './records.js';
export * from './send-buffer.js';
export * from './producer.js';
export * from './admin.js';
export type { TopicSpec } from './ensure-topics.js';
export { errorChain, errorTypes, isGenerationLost, isRetriable } from './commit.js';
export * from './key-scan.js';
export { partitionKey, splitPartitionKey } from './partition-key.js';
// The consumer engine's parts, for consumers built on them outside the port (docs/kafka.md#the-consumer-engine).
export { GroupReader, assignedTopics, committedWithin, grouplessFetcher } from './group-reader.js';
export type { Generation } from './membership.js';
export { heldBytes } from './fetcher.js';
export * from './offset-progress.js';
export { DEFAULT_TRANSACTION_TIMEOUT_MS, GroupFencedError, TransactionFencedError, createTransactionalProducer, isFenced } from './transaction.js';
export type { Transaction, TransactionGroupMember, TransactionOffset, TransactionalProducer, TransactionalProducerOptions } from './transaction.js';
export { createOffsetReader } from './offset-reader.js';
export type { OffsetReader } from './offset-reader.js';
