// `delivery` (docs/configuration.md#delivery): what every destination's deliveries share:
// the timeout, retry tiers, concurrency, the buffer budget, the network rule, and the
// circuit breaker and proxy each destination may override.

import { checkBoolean, checkInt } from './basic-checks.js';
import { circuitBreakerSchema } from './circuit-breaker.js';
import type { CircuitBreakerConfig } from './circuit-breaker.js';
import { proxySchema } from './proxy.js';
import type { ProxyConfig } from './proxy.js';
import { checkDuration, checkSize } from './quantities.js';
import { DEFAULT_RETRY_TIERS, retryTiers } from './retry.js';
import type { RetryTier } from './retry.js';
import { formatSize } from '../size.js';
import { field, strictObject } from './zod-fields.js';

export interface DeliveryConfig {
  timeoutMs: number;
  retryTiers: RetryTier[];
  maxRetryWindowMs: number;
  concurrencyPerDestination: number;
  /**
   * YAML `bufferBudget`: the bytes of fetched records a deliverer holds at once, shared by
   * its destinations (src/kafka/fetch-plan.ts; docs/operations.md#memory). Read at start.
   */
  bufferBudgetBytes: number;
  /** Connect only to global unicast addresses (src/network/address-rule.ts). */
  blockPrivateNetworks: boolean;
  /**
   * Moves to a retry tier or the dead letters in a Kafka transaction with the offset they
   * move (with kafka.transactions; docs/kafka.md#transactions). On by default; `false`
   * writes, then commits. Read at start.
   */
  transactionalMoves: boolean;
  /** The circuit breaker's thresholds for every destination (each may override them). */
  circuitBreaker?: CircuitBreakerConfig;
  /** The egress proxy of every destination without its own (docs/webhooks.md#egress-proxy); else HTTPS_PROXY/HTTP_PROXY (load.ts). */
  proxy?: ProxyConfig;
}

/** `delivery.bufferBudget`: the default keeps a deliverer inside its shipped 768Mi limit with margin (docs/operations.md#memory). */
export const DEFAULT_BUFFER_BUDGET = 64 * 1024 * 1024;
const MIN_BUFFER_BUDGET = 8 * 1024 * 1024;
const MAX_BUFFER_BUDGET = 16 * 1024 * 1024 * 1024;

export const deliverySchema = strictObject({
  timeout: field(checkDuration).prefault('5s'),
  retryTiers: retryTiers.prefault([...DEFAULT_RETRY_TIERS]),
  maxRetryWindow: field(checkDuration).prefault('4h'),
  concurrencyPerDestination: field(checkInt(1, 100_000)).prefault(64),
  bufferBudget: field(checkSize(MIN_BUFFER_BUDGET, MAX_BUFFER_BUDGET)).prefault(formatSize(DEFAULT_BUFFER_BUDGET)),
  blockPrivateNetworks: field(checkBoolean).prefault(false),
  transactionalMoves: field(checkBoolean).prefault(true),
  circuitBreaker: circuitBreakerSchema.optional(),
  proxy: proxySchema.optional(),
}).transform(
  (d): DeliveryConfig => ({
    timeoutMs: d.timeout,
    retryTiers: d.retryTiers,
    maxRetryWindowMs: d.maxRetryWindow,
    concurrencyPerDestination: d.concurrencyPerDestination,
    bufferBudgetBytes: d.bufferBudget,
    blockPrivateNetworks: d.blockPrivateNetworks,
    transactionalMoves: d.transactionalMoves,
    ...(d.circuitBreaker === undefined ? {} : { circuitBreaker: d.circuitBreaker }),
    ...(d.proxy === undefined ? {} : { proxy: d.proxy }),
  }),
);
