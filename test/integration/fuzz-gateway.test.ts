// Fuzzed requests to the gateway: single-call routes and /v1/batch with a fuzzed
// envelope (context, integrations and sentAt merged into the call), around the same
// hostile calls as the `calls` fuzzing. First a property of the gateway's pure request
// handling, then end to end through a real `switchyard gateway` process: every answer
// is 200, 400 or 413 with a reason; what it accepted is in `calls` exactly as the
// contract says and readable by the router; what it refused or listed as invalid is in
// `calls.invalid` — and the gateway stays up.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CALL_BYTES, parseCallBytes, routingKey } from '../../src/calls/index.js';
import { ingest } from '../../src/gateway/ingest.js';
import { parseJsonBody } from '../../src/gateway/request-body.js';
import { matchRoute } from '../../src/gateway/routes.js';
import { expectedBodyWithPlaceholders } from '../chaos/expected-body.js';
import { readGatewayRequest } from '../chaos/fuzz-feed.js';
import { fuzzRequest, fuzzRequests } from '../chaos/fuzz-inputs.js';
import type { FuzzRequest } from '../chaos/fuzz-inputs.js';
import { Ledger } from '../chaos/ledger.js';
import { traceIdOf } from '../chaos/receivers.js';
import { chaosConfig, chaosTopology } from '../chaos/topology.js';
import { judge } from '../chaos/verdict.js';
import type { Arrivals, Expectation, Kept } from '../chaos/verdict.js';
import { startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { topicNames } from '../../src/runtime/topics.js';

const topology = chaosTopology({ failingShare: 0 });
const WRITE_KEY = topology.fuzzSource.writeKey!;
const END_TO_END_REQUESTS = 1_500;

/** The stored call's body as the contract renders it, compared with the harness's reading of the request. */
function storedMatchesRequest(value: string, request: FuzzRequest): string | undefined {
  const reading = readGatewayRequest(topology, request);
  if (reading.body === undefined) return `stored ${value.slice(0, 200)} though the request cannot be read as a call`;
  const stored = expectedBodyWithPlaceholders(JSON.parse(value) as Record<string, unknown>, reading.body.knownMessageId);
  return stored === reading.body.text ? undefined : `stored ${stored.slice(0, 300)}, expected ${reading.body.text.slice(0, 300)}`;
}

describe('fuzzed gateway requests: the request handling (property)', () => {
  it('answers every body without throwing; what it accepts the router accepts, as the contract merges it', () => {
    fc.assert(
      fc.property(fuzzRequest, (request) => {
        const route = matchRoute(request.path)!;
        const parsed = parseJsonBody(request.body);
        if (!parsed.ok) {
          expect(parsed.message).toMatch(/not valid|empty/);
          return;
        }
        const result = ingest({ route, body: parsed.value, receivedAtMs: Date.UTC(2026, 4, 1), newMessageId: () => 'generated-id' });
        if (!result.ok) {
          expect([400, 413]).toContain(result.status);
          expect(result.message.length).toBeGreaterThan(20);
          return;
        }
        for (const call of result.accepted) {
          const stored = parseCallBytes(Buffer.from(call.value));
          expect(stored.ok).toBe(true);
          if (!stored.ok) return;
          expect(Buffer.byteLength(call.value)).toBeLessThanOrEqual(MAX_CALL_BYTES);
          expect(call.key).toBe(routingKey(stored.call));
          expect(storedMatchesRequest(call.value, request)).toBeUndefined();
        }
        for (const call of result.rejected) expect(call.message.length).toBeGreaterThan(20);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('fuzzed gateway requests: a gateway process answering them', () => {
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;
  let gateway: Daemon;
  let base: string;

  beforeAll(async () => {
    kafka = await createTestKafka();
    const shape = chaosConfig(topology, {
      brokers: testBrokers().join(','),
      clientId: randomName('fuzzgw'),
      topicPrefix: prefix,
      partitions: 2,
      gatewayPort: 0,
      adminPort: 0,
      receiverUrls: new Map(topology.receivers.map((r) => [r.name, `http://127.0.0.1:9/${r.name}`])),
      delivery: { timeout: '1s', retryTiers: ['1s'], maxRetryWindow: '10s', concurrencyPerDestination: 8 },
    });
    gateway = await startRole('gateway', writeConfigFile(shape));
    const listening = await gateway.waitForLog((line) => line.msg === 'gateway listening', 'the gateway to listen');
    base = `http://127.0.0.1:${String(listening.port)}`;
  });

  afterAll(async () => {
    gateway?.kill('SIGKILL');
    await kafka?.close();
  });

  it('answers 200, 400 or 413 to 1,500 fuzzed requests and keeps everything it took, valid or not', async () => {
    const ledger = new Ledger(randomBytes(4).toString('hex'));
    const seed = Date.now() % 2 ** 31;
    const requests = new Map<string, FuzzRequest>();
    const expectations: Expectation[] = [];
    const statuses = new Map<number, number>();
    const odd: string[] = [];
    const inputs = [...fuzzRequests(END_TO_END_REQUESTS, seed)];
    const send = async (request: FuzzRequest): Promise<void> => {
      const { traceparent, key } = ledger.nextTrace();
      requests.set(key, request);
      const response = await fetch(`${base}${request.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`, traceparent },
        body: request.body,
      });
      const answer = (await response.json()) as { success?: boolean; invalid?: unknown[]; message?: string };
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 200) {
        const listed = Array.isArray(answer.invalid) && answer.invalid.length > 0;
        expectations.push({ key, origin: 'fuzz', acknowledged: true, claim: listed ? 'invalid' : 'valid', destinations: ['calls'] });
      } else if (response.status === 400 || response.status === 413) {
        expect(answer.success).toBe(false);
        expect(answer.message?.length ?? 0).toBeGreaterThan(20);
        expectations.push({ key, origin: 'fuzz', acknowledged: true, claim: 'invalid', destinations: undefined });
      } else {
        odd.push(`${response.status} ${JSON.stringify(answer).slice(0, 200)} for ${request.recipe}`);
      }
    };
    for (let i = 0; i < inputs.length; i += 20) await Promise.all(inputs.slice(i, i + 20).map(send));
    expect(odd).toEqual([]);

    // What the gateway wrote, by the trace id of each request's traceparent.
    const stored = new Map<string, Arrivals>();
    const wrong: string[] = [];
    const acceptedCount = expectations.filter((e) => e.claim === 'valid').length;
    for (const message of await kafka.readAll(names.calls, { atLeast: acceptedCount, timeoutMs: 30_000 })) {
      const key = ledger.keyOf(undefined, traceIdOf(message.headers.traceparent));
      const seen = stored.get(key) ?? { requests: 0, delivered: 0 };
      seen.requests += 1;
      seen.delivered += 1;
      stored.set(key, seen);
      if (message.headers['source-id'] !== topology.fuzzSource.id) wrong.push(`${key}: source-id ${message.headers['source-id']}`);
      const request = requests.get(key);
      const problem = request === undefined ? 'no such request' : storedMatchesRequest(message.text, request);
      if (problem !== undefined) wrong.push(`${key}: ${problem}`);
    }
    const invalidKept = new Map<string, Kept>();
    const keptCount = expectations.length - acceptedCount;
    for (const message of await kafka.readAll(names.callsInvalid, { atLeast: keptCount, timeoutMs: 30_000 })) {
      const key = ledger.keyOf(undefined, traceIdOf(message.headers.traceparent));
      const kept = invalidKept.get(key) ?? { count: 0, withError: 0 };
      kept.count += 1;
      if ((message.headers.error ?? '').length > 0) kept.withError += 1;
      invalidKept.set(key, kept);
    }

    const verdict = judge(expectations, { arrivals: new Map([['calls', stored]]), deadLetters: new Map(), invalidKept });
    process.stderr.write(
      `fuzzed gateway requests (seed ${seed}): answers ${JSON.stringify(Object.fromEntries(statuses))}; ${verdict.fuzz.delivered} stored in calls, ${verdict.fuzz.invalidKept} kept in calls.invalid\n`,
    );
    expect({ lost: verdict.lost, unexpected: verdict.unexpected, problems: verdict.problems, wrong: wrong.slice(0, 5) }).toEqual({
      lost: [],
      unexpected: [],
      problems: [],
      wrong: [],
    });
    expect(verdict.fuzz.delivered + verdict.fuzz.invalidKept).toBe(END_TO_END_REQUESTS);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(100);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(10);

    expect(gateway.process.exitCode).toBeNull();
    gateway.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });
});
