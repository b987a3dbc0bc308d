// The producers of the Kafka destinations' topics (kafka-sender.ts), one per cluster and
// shared by every lane that writes there: Switchyard's own cluster (no `settings.cluster`)
// and each other cluster, told apart by its settings. Idempotent, acks=all.
//
// NOTE: another cluster's brokers pass the address guard first when
// `delivery.blockPrivateNetworks` is on (docs/webhooks.md#the-address-guard): every
// address their names resolve to must be a global unicast one, checked before the
// producer connects and again at most every GUARD_RECHECK_MS. The brokers that the
// cluster's metadata names afterwards are not checked (the Kafka client connects to them
// itself): docs/kafka.md#another-cluster says so.
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import type { KafkaTargetCluster } from '../config/schema.js';
import { createKafka, createProducer } from '../kafka/index.js';
import type { KafkaClient, RecordProducer } from '../kafka/index.js';
import { judgeAddress } from '../network/address-rule.js';
import type { KafkaTarget } from './destination-settings.js';
import type { TargetProducers } from './kafka-sender.js';
import { BlockedAddressError, guardedLookup, refuseLiteralAddress } from './private-network.js';
import type { ResolveAll } from './private-network.js';

/** Idempotent; sends merged as every role's are (producer.ts): kafka-sender.ts sends a refused request's events again alone. */
const TARGET_PRODUCER = { idempotent: true } as const;

/** How long a guard verdict on a cluster's brokers holds (DNS answers change). */
const GUARD_RECHECK_MS = 60_000;

export interface TargetProducersOptions {
  /** Switchyard's own cluster (`kafka`). */
  kafka: KafkaClient;
  blockPrivateNetworks: boolean;
  logger: Logger;
  /** Tests only: the resolver broker names go through. */
  resolve?: ResolveAll;
}

interface ClusterProducer {
  producer: RecordProducer;
  /** The guard's verdict on the brokers, and when it was reached. */
  verdict?: { refused: Error | undefined; atMs: number };
}

export class ClusterProducers implements TargetProducers {
  private readonly own: ClusterProducer;
  private readonly others = new Map<string, ClusterProducer>();

  constructor(private readonly options: TargetProducersOptions) {
    this.own = { producer: createProducer(createKafka(options.kafka.settings, options.logger, { clientIdSuffix: 'kafka-destinations' }), TARGET_PRODUCER) };
  }

  async of(target: KafkaTarget): Promise<RecordProducer | Error> {
    const { cluster } = target;
    if (cluster === undefined) return this.own.producer;
    const key = JSON.stringify(cluster);
    let entry = this.others.get(key);
    if (entry === undefined) {
      entry = { producer: createProducer(this.clientOf(cluster), TARGET_PRODUCER) };
      this.others.set(key, entry);
    }
    if (!this.options.blockPrivateNetworks) return entry.producer;
    const now = Date.now();
    if (entry.verdict === undefined || now - entry.verdict.atMs >= GUARD_RECHECK_MS) {
      entry.verdict = { refused: await firstRefusal(cluster.brokers, this.options.resolve), atMs: now };
    }
    return entry.verdict.refused ?? entry.producer;
  }

  /** Disconnects every producer (each even when another failed). */
  async close(): Promise<void> {
    const all = [this.own, ...this.others.values()];
    this.others.clear();
    const results = await Promise.allSettled(all.map(({ producer }) => producer.disconnect()));
    for (const result of results) if (result.status === 'rejected') this.options.logger.warn({ err: result.reason }, 'a Kafka destination producer did not close cleanly');
  }

  /** Another cluster's connection settings: its brokers, client id, TLS and SASL; the rest as Switchyard's own. */
  private clientOf(cluster: KafkaTargetCluster): KafkaClient {
    const { ssl: _ssl, sasl: _sasl, ...own } = this.options.kafka.settings;
    const settings: KafkaClient['settings'] = { ...own, brokers: [...cluster.brokers], clientId: cluster.clientId ?? own.clientId };
    if (cluster.tls !== undefined) settings.ssl = cluster.tls;
    if (cluster.sasl !== undefined) settings.sasl = cluster.sasl;
    return createKafka(settings, this.options.logger, cluster.clientId === undefined ? { clientIdSuffix: 'kafka-destinations' } : {});
  }
}

/** The guard's refusal of the first broker (host:port) with an address it refuses, or undefined. */
export async function firstRefusal(brokers: readonly string[], resolve?: ResolveAll): Promise<Error | undefined> {
  const lookup = guardedLookup({ guard: true, ...(resolve === undefined ? {} : { resolve }) });
  for (const broker of brokers) {
    const host = broker.slice(0, broker.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      const refused = refuseLiteralAddress(host) ?? (judgeAddress(host) === undefined ? new BlockedAddressError(host, host, undefined) : undefined);
      if (refused !== undefined) return refused;
      continue;
    }
    const error = await new Promise<Error | undefined>((settle) => lookup(host, { all: true }, (e) => settle(e ?? undefined)));
    // NOTE: a name that does not resolve now is not refused: the producer's own connection fails and the event is retried.
    if (error instanceof BlockedAddressError) return error;
  }
  return undefined;
}
