// The document of GET /v1/destinations from a process that runs no deliverer (a gateway or
// router pod): Kafka's figures from a real broker, the notes that say what is missing,
// and an answer without Kafka's figures when the brokers do not answer.
import { describe, expect, it } from 'vitest';
import { createDestinationsStatus } from '../../src/admin/destinations-status.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const answeredBy = { pod: 'switchyard-gateway-0', role: 'gateway', version: '0.1.0', pid: 1, startedAt: '2026-05-01T12:00:00.000Z' };

function config(brokers: string[], prefix: string) {
  return testConfig({
    kafka: { brokers, clientId: randomName('status'), topicPrefix: prefix, partitions: 1 },
    delivery: { retryTiers: ['10s', '1m'] },
    sources: [{ id: 'web' }],
    destinations: [
      { id: 'b-hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://user:secret@b.example.com/x?sig=1' }] } },
      { id: 'a-hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://a.example.com/' }] } },
    ],
  });
}

describe('the destinations document', () => {
  it('from a gateway pod: Kafka figures, no last minute or circuits, and notes that say so', async () => {
    const prefix = randomPrefix();
    const kafka = await createTestKafka();
    try {
      // Two dead letters of b-hooks, nothing replayed yet.
      const letter = { key: 'u-1', value: '{}', headers: { 'message-id': 'm-1', error: 'webhooks[0] https://b.example.com: 503 Service Unavailable' } };
      await kafka.produce(`${prefix}deliveries.b-hooks.dlq`, [letter, letter]);
      const cfg = config(testBrokers(), prefix);
      const status = createDestinationsStatus({ config: staticConfigStore(cfg), kafka: createKafka(cfg.kafka, silentLogger()), answeredBy, logger: silentLogger() });
      const doc = await status();
      expect(doc.answeredBy).toEqual(answeredBy);
      expect(doc.kafka.ok).toBe(true);
      expect(doc.notes[0]).toBe(
        'this process (switchyard-gateway-0, role gateway) runs no deliverer: no figures of the last minute and no circuit states here; ask a deliverer pod for them (kubectl port-forward deploy/switchyard-deliverer 9464)',
      );
      expect(doc.destinations.map((d) => [d.id, d.health, d.reasons])).toEqual([
        ['b-hooks', 'attention', ['2 dead letters not replayed']],
        ['a-hooks', 'ok', []],
      ]);
      expect(doc.destinations[0]).toMatchObject({
        lastMinute: null,
        lastHour: null,
        urls: [{ index: 0, url: 'webhooks[0] https://b.example.com', circuit: null }],
        consumerLag: 0,
        retryBacklog: [
          { tier: '10s', waiting: 0 },
          { tier: '1m', waiting: 0 },
        ],
        deadLetters: { kept: 2, notReplayed: 2 },
      });
      expect(JSON.stringify(doc)).not.toContain('secret');
    } finally {
      await kafka.close();
    }
  });

  it('answers without Kafka figures, saying why, when the brokers do not answer', async () => {
    const cfg = config(['127.0.0.1:1'], randomPrefix());
    const status = createDestinationsStatus({ config: staticConfigStore(cfg), kafka: createKafka(cfg.kafka, silentLogger()), answeredBy, logger: silentLogger(), kafkaTimeoutMs: 2_000 });
    const doc = await status();
    expect(doc.kafka.ok).toBe(false);
    expect(doc.kafka).toMatchObject({ error: expect.stringContaining('(Kafka at 127.0.0.1:1): lag, retry backlog and dead letters are unknown') });
    expect(doc.destinations.map((d) => [d.id, d.health, d.consumerLag, d.deadLetters])).toEqual([
      ['a-hooks', 'ok', null, null],
      ['b-hooks', 'ok', null, null],
    ]);
  });
});
