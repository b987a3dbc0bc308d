import { describe, expect, it } from 'vitest';
import { retryingTransient } from '../../../src/kafka/admin.js';

const notCoordinator = () => Object.assign(new Error('This is not the correct coordinator for this group'), { name: 'KafkaJSProtocolError', retriable: true });
const denied = () => Object.assign(new Error('Not authorized to access group'), { name: 'KafkaJSProtocolError', retriable: false });

describe('retryingTransient', () => {
  it('asks again while the answer is a transient error, waiting 0.2 s more each time', async () => {
    const waits: number[] = [];
    let calls = 0;
    const result = await retryingTransient(
      async () => {
        calls += 1;
        if (calls < 3) throw notCoordinator();
        return 'offsets';
      },
      async (ms) => void waits.push(ms),
    );
    expect(result).toBe('offsets');
    expect(waits).toEqual([200, 400]);
  });

  it('gives up after five tries, with the last error', async () => {
    let calls = 0;
    const call = retryingTransient(
      async () => {
        calls += 1;
        throw notCoordinator();
      },
      async () => undefined,
    );
    await expect(call).rejects.toThrow('not the correct coordinator');
    expect(calls).toBe(5);
  });

  it('fails at once on an error another try would get again', async () => {
    let calls = 0;
    const call = retryingTransient(
      async () => {
        calls += 1;
        throw denied();
      },
      async () => undefined,
    );
    await expect(call).rejects.toThrow('Not authorized');
    expect(calls).toBe(1);
  });
});
