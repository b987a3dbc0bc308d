// How the admin side reads @platformatic/kafka's errors and wire.ts's answers: what it
// tries again (retryingTransient), and what says a group is in use or not ours to see.
import { MultipleErrors, ProtocolError, ResponseError } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import { isGroupInUse, isGroupNotAuthorized, retryingTransient } from '../../../src/kafka/admin.js';
import { ERROR, KafkaAnswerError } from '../../../src/kafka/wire.js';

/** An OffsetFetch answer with this error code for the group, as @platformatic/kafka's Admin rejects it after its own tries. */
const answered = (code: number) => new MultipleErrors('Listing consumer group offsets failed.', [new ResponseError(9, 6, { '/errorCode': [code, null] }, { throttleTimeMs: 0, topics: [], errorCode: code, groups: [] })]);
const notCoordinator = () => answered(ERROR.NOT_COORDINATOR);
const denied = () => answered(ERROR.GROUP_AUTHORIZATION_FAILED);

describe('retryingTransient', () => {
  it('asks again while the answer is a transient error, waiting 0.2 s more each time', async () => {
    const waits: number[] = [];
    let calls = 0;
    const result = await retryingTransient(
      async () => {
        calls += 1;
        if (calls === 1) throw notCoordinator();
        if (calls === 2) throw new KafkaAnswerError(ERROR.COORDINATOR_LOAD_IN_PROGRESS, 'reading the commits of consumer group "g"');
        return 'offsets';
      },
      async (ms) => void waits.push(ms),
    );
    expect(result).toBe('offsets');
    expect(waits).toEqual([200, 400]);
  });

  it('asks again when a partition made a moment ago has no leader ready for ListOffsets yet', async () => {
    let calls = 0;
    const result = await retryingTransient(
      async () => {
        calls += 1;
        if (calls === 1) throw new KafkaAnswerError(ERROR.NOT_LEADER_OR_FOLLOWER, 'listing the offsets of partition 0 of topic "switchyard.destinations.state"');
        return 'ends';
      },
      async () => undefined,
    );
    expect(result).toBe('ends');
    expect(calls).toBe(2);
  });

  it('gives up after five tries, with the last error', async () => {
    let calls = 0;
    const call = retryingTransient(
      async () => {
        calls += 1;
        throw new KafkaAnswerError(ERROR.NOT_COORDINATOR, 'committing the offsets of consumer group "g"');
      },
      async () => undefined,
    );
    await expect(call).rejects.toThrow('committing the offsets of consumer group "g": the broker answered NOT_COORDINATOR');
    expect(calls).toBe(5);
  });

  it.each([
    ['the client\'s answer', denied()],
    ['a wire.ts answer', new KafkaAnswerError(ERROR.GROUP_AUTHORIZATION_FAILED, 'reading the commits of consumer group "g"')],
  ])('fails at once on an error another try would get again: %s', async (_, error) => {
    let calls = 0;
    const call = retryingTransient(
      async () => {
        calls += 1;
        throw error;
      },
      async () => undefined,
    );
    await expect(call).rejects.toBe(error);
    expect(calls).toBe(1);
  });
});

describe('isGroupInUse and isGroupNotAuthorized', () => {
  it.each([
    ['UNKNOWN_MEMBER_ID from wire.ts', new KafkaAnswerError(ERROR.UNKNOWN_MEMBER_ID, 'committing'), true, false],
    ['ILLEGAL_GENERATION from wire.ts', new KafkaAnswerError(ERROR.ILLEGAL_GENERATION, 'committing'), true, false],
    ['REBALANCE_IN_PROGRESS inside the client\'s aggregate', answered(ERROR.REBALANCE_IN_PROGRESS), true, false],
    ['a bare ProtocolError', new ProtocolError('UNKNOWN_MEMBER_ID'), true, false],
    ['GROUP_AUTHORIZATION_FAILED from wire.ts', new KafkaAnswerError(ERROR.GROUP_AUTHORIZATION_FAILED, 'committing'), false, true],
    ['GROUP_AUTHORIZATION_FAILED inside the client\'s aggregate', denied(), false, true],
    ['NOT_COORDINATOR', notCoordinator(), false, false],
    ['an error of no broker', new Error('socket hang up'), false, false],
  ])('%s', (_, error, inUse, notAuthorized) => {
    expect(isGroupInUse(error)).toBe(inUse);
    expect(isGroupNotAuthorized(error)).toBe(notAuthorized);
  });
});
