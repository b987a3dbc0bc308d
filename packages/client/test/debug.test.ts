import { afterEach, describe, expect, it, vi } from 'vitest';
import { Analytics } from '../src/index.js';
import { debugEnabled, redact } from '../src/debug.js';
import { fakeTransport } from './fake-transport.js';

const WRITE_KEY = 'wk-secret-9f3a';
const BASIC = Buffer.from(`${WRITE_KEY}:`).toString('base64');

let client: Analytics | undefined;
afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = undefined;
  vi.unstubAllEnvs();
});

describe('debugEnabled', () => {
  it.each([
    ['analytics', true],
    ['express,analytics', true],
    ['express analytics', true],
    ['analytics*', true],
    ['*', true],
    ['*,-analytics', false],
    ['express', false],
    ['analytic', false],
    ['', false],
    [undefined, false],
  ])('DEBUG=%j → %s', (value, expected) => {
    expect(debugEnabled(value)).toBe(expected);
  });
});

describe('redact', () => {
  it('cuts every occurrence of every secret', () => {
    expect(redact('a KEY b KEY c BASIC', ['KEY', 'BASIC', ''])).toBe('a [redacted] b [redacted] c [redacted]');
  });
});

describe('DEBUG=analytics output', () => {
  it('logs what is queued and sent, never the write key', async () => {
    vi.stubEnv('DEBUG', 'analytics');
    const lines: string[] = [];
    const transport = fakeTransport();
    client = new Analytics(WRITE_KEY, { transport, logger: (line) => lines.push(line), flushAt: 2 });
    const first = client.track({ userId: 'u-1', event: 'Order Completed' });
    client.identify({ userId: 'u-1', traits: { plan: 'pro' } });
    await client.flush();
    // Each line: "analytics <ISO time> <what>".
    for (const line of lines) expect(line).toMatch(/^analytics \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /);
    const text = lines.map((line) => line.replace(/^analytics \S+ /, ''));
    expect(text[0]).toBe('client ready: sending to fake transport, flushAt 2, flushAfter 5000 ms');
    expect(text).toContainEqual(expect.stringMatching(new RegExp(`^queued track call ${first} \\(\\d+ bytes; 1 waiting\\)$`)));
    expect(text).toContainEqual(expect.stringMatching(/^queued identify call \S+ \(\d+ bytes; 2 waiting\)$/));
    expect(text).toContainEqual(expect.stringMatching(/^sending 2 calls \(\d+ bytes of calls\) to fake transport, attempt 1$/));
    expect(text).toContainEqual('sent 2 calls to fake transport');
    for (const line of lines) {
      expect(line).not.toContain(WRITE_KEY);
      expect(line).not.toContain(BASIC);
    }
  });

  it('keeps the write key out even when a server echoes it back, in debug lines and the default error report', async () => {
    const lines: string[] = [];
    const transport = fakeTransport();
    client = new Analytics(WRITE_KEY, {
      transport,
      debug: true,
      logger: (line) => lines.push(line),
      flushAt: 1,
      maxRetries: 1,
      minRetryDelay: 1,
      maxRetryDelay: 1,
    });
    transport.answer(
      { kind: 'retryable', reason: `HTTP 503: overloaded for key ${WRITE_KEY}` },
      { kind: 'failure', reason: `HTTP 401: unknown write key ${WRITE_KEY} (basic ${BASIC})`, status: 401 },
    );
    // Sent in the background (flushAt 1, no flush() waiting), so the failure goes to onError.
    client.track({ userId: 'u', event: 'e' });
    // No onError given: the failure is reported as one line to the logger.
    const report = /^analytics: 1 call refused by fake transport: HTTP 401: unknown write key \[redacted\] \(basic \[redacted\]\)$/;
    await vi.waitFor(() => expect(lines).toContainEqual(expect.stringMatching(report)), { timeout: 10_000 });
    expect(lines.some((line) => line.includes('attempt 1 failed (HTTP 503: overloaded for key [redacted])'))).toBe(true);
    for (const line of lines) {
      expect(line).not.toContain(WRITE_KEY);
      expect(line).not.toContain(BASIC);
    }
  });

  it('is silent without DEBUG, with another DEBUG, and when the debug option says no', async () => {
    for (const [env, option] of [[undefined, undefined], ['express:*', undefined], ['analytics', false]] as const) {
      if (env === undefined) vi.stubEnv('DEBUG', undefined);
      else vi.stubEnv('DEBUG', env);
      const lines: string[] = [];
      const quiet = new Analytics(WRITE_KEY, { transport: fakeTransport(), logger: (line) => lines.push(line), debug: option });
      quiet.track({ userId: 'u', event: 'e' });
      await quiet.close();
      expect(lines, `DEBUG=${String(env)} debug=${String(option)}`).toEqual([]);
    }
  });

  it('the debug option turns logging on without DEBUG', async () => {
    vi.stubEnv('DEBUG', undefined);
    const lines: string[] = [];
    client = new Analytics(WRITE_KEY, { transport: fakeTransport(), logger: (line) => lines.push(line), debug: true });
    expect(lines).toHaveLength(1);
  });

  it('reads DEBUG once, when the client is made', async () => {
    vi.stubEnv('DEBUG', 'analytics');
    const lines: string[] = [];
    client = new Analytics(WRITE_KEY, { transport: fakeTransport(), logger: (line) => lines.push(line) });
    vi.stubEnv('DEBUG', undefined);
    client.track({ userId: 'u', event: 'e' });
    expect(lines.some((line) => line.includes('queued track call'))).toBe(true);
  });

  it('a logger that throws does not break calls', async () => {
    client = new Analytics(WRITE_KEY, {
      transport: fakeTransport(),
      debug: true,
      logger: () => {
        throw new Error('logger bug');
      },
    });
    expect(() => client?.track({ userId: 'u', event: 'e' })).not.toThrow();
    await client.flush();
  });
});
