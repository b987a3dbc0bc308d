/**
 * `switchyard-client`: send Segment-spec calls to Switchyard from TypeScript, over HTTP
 * to the gateway or straight into the calls topic. See this package's README.md.
 */
export { Analytics, CLIENT_USER_AGENT, DEFAULT_ENDPOINT } from './analytics.js';
export type { AnalyticsOptions } from './analytics.js';
export type {
  AliasCall,
  CommonFields,
  GroupCall,
  IdentifyCall,
  PageCall,
  ScreenCall,
  TrackCall,
} from './calls.js';
export {
  AnalyticsClosedError,
  AnalyticsConfigError,
  AnalyticsDeliveryError,
  AnalyticsError,
  AnalyticsQueueFullError,
  AnalyticsValidationError,
} from './errors.js';
export type { DeliveryCode, ValidationCode } from './errors.js';
export { DEFAULT_CALLS_TOPIC } from './kafka-transport.js';
export type { KafkaSaslOptions, KafkaTlsOptions, KafkaTransportOptions } from './kafka-transport.js';
export type { BatchLimits, QueuedCall, RefusedCall, SendResult, Transport } from './transport.js';
