// The Kafka port: the only module of src/ that imports kafkajs or @platformatic/kafka. Roles use these.
export { CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS, createKafka, isKafkaClientError } from './client.js';
export type { CreateKafkaOptions, KafkaClient, KafkaSettings } from './client.js';
export { KAFKA_CLIENT_ENV, kafkaClientKindFromEnv } from './client-kind.js';
export type { KafkaClientKind } from './client-kind.js';
export * from './records.js';
export * from './send-buffer.js';
export * from './producer.js';
export * from './consumer.js';
export * from './admin.js';
export * from './topics.js';
export * from './topology.js';
export * from './headers.js';
export * from './invalid-record.js';
export type { TopicSpec } from './ensure-topics.js';
export { commitUntilDone, isGenerationLost, isRetriable } from './commit.js';
export type { CommitRetryOptions } from './commit.js';
export * from './scan-topic.js';
export * from './read-to-end.js';
export { applyIdleTimerFix } from './idle-timer-fix.js';

export * from './partition-stream.js';
export { COMMIT_STALL_MS, CommitLedger, commitDelay, commitOverdueMs, commitsStalledAt } from './commit-ledger.js';
export type { CommitChannel, CommitLedgerSettings, LedgerAccount, PartitionCommit } from './commit-ledger.js';
export { fetchWait } from './fetch-wait.js';
export type { FetchWaitSettings } from './fetch-wait.js';
export * from './offset-progress.js';
