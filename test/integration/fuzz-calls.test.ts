// Fuzzed records on the `calls` topic (test/chaos/fuzz-inputs.ts: random and truncated
// JSON, wrong types, huge strings, deep nesting, invalid UTF-8, __proto__ and
// constructor keys, absurd timestamps, numbers past 2^53). First as a property of the
// router's planning (fast-check, shrinking to the smallest failing input), then end to
// end through a real `switchyard router` process: every input is routed exactly as the
// contract says (destinations and body bytes), filtered, or kept in `calls.invalid`
// with a reason — never dropped, never a crash, never a hang.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { planCall } from '../../src/router/plan-call.js';
import { compileRoutingTable } from '../../src/router/routing-table.js';
import { normalizeReceivedBody } from '../chaos/expected-body.js';
import { readCallsRecord } from '../chaos/fuzz-feed.js';
import { fuzzCall, fuzzCalls } from '../chaos/fuzz-inputs.js';
import { Ledger } from '../chaos/ledger.js';
import { traceIdOf } from '../chaos/receivers.js';
import { chaosConfig, chaosTopology } from '../chaos/topology.js';
import { judge } from '../chaos/verdict.js';
import type { Arrivals, Kept } from '../chaos/verdict.js';
import { testConfig } from '../support/config.js';
import { startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const topology = chaosTopology({ failingShare: 0 });
const PARTITIONS = 3;
const END_TO_END_INPUTS = 3_000;

function configShape(brokers: string[], clientId: string, prefix: string): Record<string, unknown> {
  return chaosConfig(topology, {
    brokers: brokers.join(','),
    clientId,
    topicPrefix: prefix,
    partitions: PARTITIONS,
    gatewayPort: 0,
    adminPort: 0,
    // The router never calls these: only the deliverer does.
    receiverUrls: new Map(topology.receivers.map((r) => [r.name, `http://127.0.0.1:9/${r.name}`])),
    delivery: { timeout: '1s', retryTiers: ['1s'], maxRetryWindow: '10s', concurrencyPerDestination: 8 },
  });
}

function loadConfig(shape: Record<string, unknown>): Config {
  return testConfig(shape, 'fuzz.yaml');
}

describe('fuzzed calls: the router planning them (property)', () => {
  const names = topicNames('fuzz.');
  const table = compileRoutingTable(loadConfig(configShape(['127.0.0.1:9'], 'fuzz', 'fuzz.')), names);
  const headerSource = fc.constantFrom<string | undefined>('fuzz', 'fuzz', 'fuzz', undefined, 'no-such-source', '');

  it('plans every record without throwing: valid ones routed and rendered as the contract says, the rest invalid with a reason', () => {
    let offset = 0;
    fc.assert(
      fc.property(fuzzCall, headerSource, (input, sourceId) => {
        offset += 1;
        const record = {
          topic: names.calls,
          partition: 0,
          offset: String(offset),
          timestamp: '1777636800000',
          key: null,
          value: input.bytes,
          headers: sourceId === undefined ? {} : { 'source-id': Buffer.from(sourceId) },
        };
        const outcome = planCall(record, table);
        const reading = readCallsRecord(topology, input.bytes, sourceId);
        if (outcome.kind === 'invalid') {
          expect(outcome.reason).not.toBe('internal_error');
          expect(outcome.error.length).toBeGreaterThan(20);
          return;
        }
        // Whatever the router accepts, the harness's reading of the contract can read too.
        expect(reading.destinations).toBeDefined();
        expect(outcome.decisions.filter((d) => d.routed).map((d) => d.target.id)).toEqual(reading.destinations);
        if (outcome.body !== null && reading.body !== undefined) {
          const normalized = normalizeReceivedBody(outcome.body.toString('utf8'), reading.body.knownMessageId);
          expect(normalized).toEqual({ ok: true, text: reading.body.text });
        }
      }),
      { numRuns: 10_000 },
    );
  });
});

describe('fuzzed calls: a router process consuming them', () => {
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  const clientId = randomName('fuzz');
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;
  let router: Daemon;

  beforeAll(async () => {
    kafka = await createTestKafka();
    router = await startRole('router', writeConfigFile(configShape(testBrokers(), clientId, prefix)));
  });

  afterAll(async () => {
    router?.kill('SIGKILL');
    await kafka?.close();
  });

  it('routes, filters or keeps as invalid every one of 3,000 fuzzed records, and stays up', async () => {
    const ledger = new Ledger(randomBytes(4).toString('hex'));
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
    const sources = ['fuzz', 'fuzz', 'fuzz', 'fuzz', undefined, 'no-such-source'];
    const records = [];
    let n = 0;
    for (const input of fuzzCalls(END_TO_END_INPUTS, seed)) {
      const { traceparent, key } = ledger.nextTrace();
      const sourceId = sources[n++ % sources.length];
      const reading = readCallsRecord(topology, input.bytes, sourceId);
      ledger.addFuzz(key, reading.destinations, reading.body, reading.copyGroup);
      ledger.acknowledge(key, 'unknown');
      records.push({ key: null, value: input.bytes, headers: { traceparent, ...(sourceId === undefined ? {} : { 'source-id': sourceId }) } });
    }
    for (let i = 0; i < records.length; i += 200) await kafka.produce(names.calls, records.slice(i, i + 200));

    const groupId = `${prefix}router`;
    await waitFor(
      async () => {
        const [committed] = await kafka.admin.fetchOffsets({ groupId, topics: [names.calls] });
        return topicLag(await kafka.admin.fetchTopicOffsets(names.calls), committed?.partitions ?? []) === 0;
      },
      { timeoutMs: 45_000, intervalMs: 250, what: `the router (seed ${seed}) to commit every fuzzed record; output:\n${router.output().slice(-2000)}` },
    );

    // What the router wrote, by the trace id of each input's traceparent.
    const arrivals = new Map<string, Map<string, Arrivals>>();
    const bodyProblems: string[] = [];
    for (const destination of topology.destinations) {
      const byKey = new Map<string, Arrivals>();
      const written = await kafka.readAll(names.deliveries(destination.id));
      for (const message of written) {
        const key = ledger.keyOf(undefined, traceIdOf(message.headers.traceparent));
        const seen = byKey.get(key) ?? { requests: 0, delivered: 0 };
        seen.requests += 1;
        seen.delivered += 1;
        if (!byKey.has(key)) {
          const problem = ledger.checkBody(key, message.text);
          if (problem !== undefined) bodyProblems.push(`${key}: ${problem}`);
        }
        byKey.set(key, seen);
      }
      arrivals.set(destination.id, byKey);
    }
    const invalidKept = new Map<string, Kept>();
    for (const message of await kafka.readAll(names.callsInvalid)) {
      const key = ledger.keyOf(undefined, traceIdOf(message.headers.traceparent));
      const kept = invalidKept.get(key) ?? { count: 0, withError: 0 };
      kept.count += 1;
      if ((message.headers.error ?? '').length > 0) kept.withError += 1;
      invalidKept.set(key, kept);
    }

    const verdict = judge(ledger.expectations(), { arrivals, deadLetters: new Map(), invalidKept });
    const { fuzz } = verdict;
    process.stderr.write(
      `fuzzed calls (seed ${seed}): ${fuzz.acknowledged} in = ${fuzz.delivered} routed + ${fuzz.filtered} filtered + ${fuzz.invalidKept} kept invalid + ${fuzz.lost} lost\n`,
    );
    expect({ lost: verdict.lost, unexpected: verdict.unexpected, problems: verdict.problems, bodies: bodyProblems.slice(0, 5) }).toEqual({
      lost: [],
      unexpected: [],
      problems: [],
      bodies: [],
    });
    expect(fuzz.delivered + fuzz.filtered + fuzz.invalidKept).toBe(END_TO_END_INPUTS);
    // The mix exercised every path.
    expect(fuzz.delivered).toBeGreaterThan(100);
    expect(fuzz.filtered).toBeGreaterThan(10);
    expect(fuzz.invalidKept).toBeGreaterThan(100);

    // Still up, and it stops cleanly.
    expect(router.process.exitCode).toBeNull();
    router.kill('SIGTERM');
    expect(await router.exited).toBe(0);
  });
});
