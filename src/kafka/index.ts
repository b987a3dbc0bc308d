// The Kafka port: the only module of src/ that imports @platformatic/kafka. Roles use these.
export { CONSUMER_SESSION_TIMEOUT_MS, createKafka, isKafkaClientError } from './client.js';
export type { KafkaClient } from './client.js';
export * from './records.js';
export * from './send-buffer.js';
export * from './producer.js';
export * from './consumer.js';
export * from './admin.js';
export * from './topics.js';
export * from './topology.js';
export * from './group-ids.js';
export { carryGroupCommits, readCommitsAcross } from './group-upgrade.js';
export * from './headers.js';
export * from './invalid-record.js';
export type { TopicSpec } from './ensure-topics.js';
export { commitUntilDone, isGenerationLost, isRetriable } from './commit.js';
export * from './scan-topic.js';
export * from './read-to-end.js';
export * from './key-scan.js';

export * from './partition-stream.js';
export { StreamProgress } from './stream-progress.js';
export type { CommitSnapshot, PartitionCommit } from './stream-progress.js';
export { partitionKey } from './partition-key.js';
export * from './offset-progress.js';
export { describeProduceError, isRecordRefused } from './produce-errors.js';
export { DEFAULT_TRANSACTION_TIMEOUT_MS, GroupFencedError, GroupedTransactions, TransactionFencedError, createTransactionalProducer, isFenced } from './transaction.js';
export type { Transaction, TransactionGroupMember, TransactionOffset, TransactionalProducer, TransactionalProducerOptions } from './transaction.js';
