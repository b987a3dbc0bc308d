// The pure parts of both transports: URLs, bodies, and what each answer means.
import { describe, expect, it } from 'vitest';
import { AnalyticsConfigError } from '../src/index.js';
import type { QueuedCall } from '../src/index.js';
import { batchBody, batchUrl, classifyAnswer } from '../src/http-transport.js';
import { classifyKafkaError } from '../src/kafka-transport.js';

const NOW = Date.parse('2026-05-01T12:00:00.000Z');
const redactKey = (text: string) => text.split('wk-secret').join('[redacted]');

describe('batchUrl', () => {
  it.each([
    ['http://localhost:8080', 'http://localhost:8080/v1/batch'],
    ['http://localhost:8080/', 'http://localhost:8080/v1/batch'],
    ['https://gw.example.com/segment/', 'https://gw.example.com/segment/v1/batch'],
  ])('%s → %s', (endpoint, url) => {
    expect(batchUrl(endpoint).href).toBe(url);
  });

  it.each([
    ['localhost:8080', /is not a URL|must start with http/],
    ['not a url', /is not a URL: set it like "http:\/\/localhost:8080"/],
    ['ftp://example.com', /must start with http:\/\/ or https:\/\//],
    ['https://key:@gw.example.com', /must not carry a user name or password/],
    ['https://gw.example.com/?x=1', /without \?query/],
  ])('refuses %s', (endpoint, message) => {
    expect(() => batchUrl(endpoint)).toThrow(AnalyticsConfigError);
    expect(() => batchUrl(endpoint)).toThrow(message);
  });
});

describe('batchBody', () => {
  it('puts the calls in exactly as queued, then sentAt', () => {
    const calls = [{ json: '{"type":"track","b":1}' }, { json: '{"type":"identify"}' }] as QueuedCall[];
    expect(batchBody(calls, '2026-05-01T12:00:00.000Z')).toBe(
      '{"batch":[{"type":"track","b":1},{"type":"identify"}],"sentAt":"2026-05-01T12:00:00.000Z"}',
    );
  });
});

describe('classifyAnswer', () => {
  const headers = (h: Record<string, string> = {}) => new Headers(h);

  it.each([200, 201, 204, 299])('%i: accepted', (status) => {
    expect(classifyAnswer(status, headers(), '{"success":true}', redactKey, NOW)).toEqual({ kind: 'success' });
  });

  it('200 listing calls kept aside as invalid: accepted, with those calls', () => {
    const body = JSON.stringify({
      success: true,
      invalid: [{ index: 1, code: 'bad_field', message: 'track call field "event" must be a string; key wk-secret' }],
    });
    expect(classifyAnswer(200, headers(), body, redactKey, NOW)).toEqual({
      kind: 'success',
      refused: [{ index: 1, code: 'bad_field', message: 'track call field "event" must be a string; key [redacted]' }],
    });
  });

  it.each([500, 502, 503, 504, 408, 429])('%i: retryable', (status) => {
    expect(classifyAnswer(status, headers(), '', redactKey, NOW)).toEqual({ kind: 'retryable', reason: `HTTP ${status}`, status });
  });

  it('503 with Retry-After carries the wait and the gateway message', () => {
    const body = '{"success":false,"code":"kafka_unavailable","message":"Kafka is not answering; retry later"}';
    expect(classifyAnswer(503, headers({ 'retry-after': '5' }), body, redactKey, NOW)).toEqual({
      kind: 'retryable',
      reason: 'HTTP 503: kafka_unavailable: Kafka is not answering; retry later',
      status: 503,
      retryAfterMs: 5_000,
    });
  });

  it.each([400, 401, 403, 404, 413, 422])('%i: refused, not retried', (status) => {
    expect(classifyAnswer(status, headers(), 'nope', redactKey, NOW)).toEqual({ kind: 'failure', reason: `HTTP ${status}: nope`, status });
  });

  it('a 401 that echoes the write key does not carry it into the reason', () => {
    const body = '{"success":false,"code":"unknown_write_key","message":"write key wk-secret is not configured"}';
    const result = classifyAnswer(401, headers(), body, redactKey, NOW);
    expect(result).toEqual({
      kind: 'failure',
      reason: 'HTTP 401: unknown_write_key: write key [redacted] is not configured',
      status: 401,
    });
  });

  it('a redirect is refused with where it points', () => {
    expect(classifyAnswer(301, headers({ location: 'https://gw.example.com/v1/batch' }), '', redactKey, NOW)).toEqual({
      kind: 'failure',
      reason: 'HTTP 301: the endpoint redirects to https://gw.example.com/v1/batch; set endpoint to the final address',
      status: 301,
    });
  });

  it('cuts a long answer', () => {
    const result = classifyAnswer(400, headers(), 'x'.repeat(5_000), redactKey, NOW);
    expect(result.kind === 'failure' && result.reason.length).toBe('HTTP 400: '.length + 300 + 1);
  });
});

describe('classifyKafkaError', () => {
  const protocolError = (type: string, retriable: boolean) =>
    Object.assign(new Error(`broker says ${type}`), { name: 'KafkaJSProtocolError', type, retriable });

  it('a broker that is down or electing a leader: retryable', () => {
    const connection = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1'), {
      name: 'KafkaJSConnectionError',
      retriable: true,
    });
    const exhausted = Object.assign(new Error('Connection error'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      retriable: false,
      cause: protocolError('LEADER_NOT_AVAILABLE', true),
    });
    expect(classifyKafkaError(connection, 'sy.calls')).toMatchObject({ kind: 'retryable', reason: 'Kafka: Connection error: connect ECONNREFUSED 127.0.0.1:1' });
    expect(classifyKafkaError(exhausted, 'sy.calls')).toMatchObject({ kind: 'retryable' });
  });

  it('a missing topic: retryable (the router may be starting), with what to do', () => {
    const missing = Object.assign(new Error('This server does not host this topic-partition'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      retriable: false,
      cause: protocolError('UNKNOWN_TOPIC_OR_PARTITION', true),
    });
    expect(classifyKafkaError(missing, 'sy.calls')).toMatchObject({
      kind: 'retryable',
      reason:
        'Kafka: This server does not host this topic-partition: broker says UNKNOWN_TOPIC_OR_PARTITION ' +
        '(topic sy.calls does not exist: start the router, which creates it, or set kafka.topic to "<topicPrefix>calls")',
    });
  });

  it('what no retry fixes: refused', () => {
    expect(classifyKafkaError(protocolError('MESSAGE_TOO_LARGE', false), 'sy.calls')).toMatchObject({
      kind: 'failure',
      reason: 'Kafka: broker says MESSAGE_TOO_LARGE (MESSAGE_TOO_LARGE)',
    });
    const wrapped = Object.assign(new Error('not authorized'), {
      name: 'KafkaJSNonRetriableError',
      retriable: false,
      cause: protocolError('TOPIC_AUTHORIZATION_FAILED', false),
    });
    expect(classifyKafkaError(wrapped, 'sy.calls')).toMatchObject({ kind: 'failure' });
    expect(classifyKafkaError(Object.assign(new Error('SASL PLAIN authentication failed'), { name: 'KafkaJSSASLAuthenticationError' }), 'sy.calls')).toMatchObject({
      kind: 'failure',
    });
  });
});
