import { describe, expect, it } from 'vitest';
import { isGenerationLost, isRetriable } from '../../../src/kafka/commit.js';
import { MultipleErrors, NetworkError, ProtocolError, ResponseError, TimeoutError, UserError } from '@platformatic/kafka';
import { FakeKafkaError } from '../../support/kafka-error.js';

describe('isGenerationLost and isRetriable', () => {
  it.each([
    ['REBALANCE_IN_PROGRESS', true],
    ['ILLEGAL_GENERATION', true],
    ['UNKNOWN_MEMBER_ID', true],
    ['FENCED_INSTANCE_ID', true],
    ['NOT_COORDINATOR_FOR_GROUP', false],
    ['COORDINATOR_LOAD_IN_PROGRESS', false],
    ['REQUEST_TIMED_OUT', false],
  ])('%s → %s', (type, lost) => {
    expect(isGenerationLost(new FakeKafkaError('x', type))).toBe(lost);
  });

  it('is true for a retriable cause under a non-retriable wrapper, as kafkajs wraps exhausted retries', () => {
    expect(isRetriable(new FakeKafkaError('retries exceeded', undefined, { cause: new FakeKafkaError('ECONNREFUSED') }, false))).toBe(true);
    expect(isRetriable(new Error('plain'))).toBe(false);
  });

  it('is false for errors without a kafkajs type', () => {
    expect(isGenerationLost(new Error('socket hang up'))).toBe(false);
    expect(isGenerationLost('text')).toBe(false);
  });
});

// @platformatic/kafka's own error classes, as its commits and fetches throw them.
describe('isGenerationLost and isRetriable on @platformatic/kafka errors', () => {
  it.each([
    ['REBALANCE_IN_PROGRESS', true, false],
    ['ILLEGAL_GENERATION', true, false],
    ['UNKNOWN_MEMBER_ID', true, false],
    ['NOT_COORDINATOR', false, true],
    ['COORDINATOR_LOAD_IN_PROGRESS', false, true],
    ['GROUP_AUTHORIZATION_FAILED', false, false],
  ] as const)('a broker answer %s: generation lost %s, retriable %s', (apiId, lost, retriable) => {
    const error = new ProtocolError(apiId);
    expect(isGenerationLost(error)).toBe(lost);
    expect(isRetriable(error)).toBe(retriable);
  });

  it('finds the broker answer inside the aggregate a request reports', () => {
    const error = new ResponseError(8, 1, { '/topics/0': [27, null] }, {});
    expect(isGenerationLost(error)).toBe(true);
    const wrapped = new MultipleErrors('commit failed after retries', [new NetworkError('connection closed'), new ProtocolError('ILLEGAL_GENERATION')]);
    expect(isGenerationLost(wrapped)).toBe(true);
  });

  it('calls a dropped connection and a request timeout retriable, a user error not', () => {
    expect(isRetriable(new NetworkError('connection closed'))).toBe(true);
    expect(isRetriable(new TimeoutError('Request timed out'))).toBe(true);
    expect(isRetriable(new MultipleErrors('Cannot connect to any broker.', [new NetworkError('ECONNREFUSED')]))).toBe(true);
    expect(isRetriable(new UserError('bad options'))).toBe(false);
    expect(isGenerationLost(new UserError('bad options'))).toBe(false);
  });
});
