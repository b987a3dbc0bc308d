// One group member of a role that runs several consumers (the deliverer: one per
// destination) on the port's consumer (src/kafka/consumer.ts, which heartbeats, holds
// partitions and commits until done): started, its join and crash kept for health,
// stopped. A role with one consumer and its own admin, producer and lag sampler uses
// createConsumerService (consumer-service.ts) instead.
import type { Logger } from 'pino';
import { startConsumer } from '../kafka/index.js';
import type { BatchHandler, ConsumerSettings, KafkaClient, RunningConsumer } from '../kafka/index.js';

export interface ConsumerMemberOptions {
  client: KafkaClient;
  settings: ConsumerSettings;
  handler: BatchHandler;
  /** What the logs call the consumer ("delivery consumer"). */
  label: string;
  logger: Logger;
}

export class ConsumerMember {
  private running: RunningConsumer | undefined;
  private hasJoined = false;
  private crashed: Error | undefined;

  constructor(private readonly options: ConsumerMemberOptions) {}

  /** Resolves once the consumer runs; the join follows (joined()). */
  async start(): Promise<void> {
    const { client, settings, handler, logger } = this.options;
    this.running = await startConsumer(client, settings, handler, { onJoin: () => (this.hasJoined = true), onCrash: (error, restart) => this.onCrash(error, restart) }, logger);
  }

  /** Joined its group, and not crashed since. */
  joined(): boolean {
    return this.hasJoined && this.crashed === undefined;
  }

  /** Set when the consumer crashed for good (kafkajs will not restart it). */
  failure(): Error | undefined {
    return this.crashed;
  }

  /** Ends the partition holds, waits for the batches in hand (they commit what they finished), leaves the group. */
  async stop(): Promise<void> {
    await this.running?.disconnect();
  }

  private onCrash(error: Error, restart: boolean): void {
    this.hasJoined = false;
    if (!restart) this.crashed = error;
    // A crash kafkajs restarts from (a coordinator still loading at start-up) is a warning, as in the router.
    if (restart) this.options.logger.warn({ err: error, restart }, `${this.options.label} crashed; kafkajs restarts it`);
    else this.options.logger.error({ err: error, restart }, `${this.options.label} crashed and will not restart`);
  }
}
