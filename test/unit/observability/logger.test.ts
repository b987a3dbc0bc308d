import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, secretForms, userHashForLog } from '../../../src/observability/logger.js';

describe('userHashForLog', () => {
  // Expected values from `printf %s ID | sha256sum | cut -c1-16`.
  it.each([
    ['u-3', 'dba074d40fbe301b'],
    ['ünïcode@example.com', '96cc00c8f00c5fd7'],
  ])('%s → %s', (userId, hash) => {
    expect(userHashForLog(userId)).toBe(hash);
  });

  it('never contains the id itself', () => {
    expect(userHashForLog('alice@example.com')).not.toContain('alice');
  });
});

describe('createLogger: secrets never reach a log line', () => {
  /** A logger writing to `lines`, with the secrets `secrets()` gives at each line. */
  const capture = (secrets: () => readonly string[]) => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    return { logger: createLogger({ level: 'info', secrets, destination: sink }), lines };
  };
  const logged = (secrets: readonly string[], write: (logger: ReturnType<typeof createLogger>) => void): string => {
    const { logger, lines } = capture(() => secrets);
    write(logger);
    logger.flush();
    return lines.join('');
  };

  it('masks a secret in any field and in the message, as written', () => {
    const out = logged(['plain-secret-1234'], (logger) => logger.info({ detail: 'x plain-secret-1234 y', nested: { a: ['plain-secret-1234'] } }, 'msg plain-secret-1234'));
    expect(out).not.toContain('plain-secret-1234');
    expect(out.match(/\*\*\*\*/g)).toHaveLength(3);
  });

  it('masks a secret with characters JSON escapes (a quote, a backslash, a control character), once or twice escaped', () => {
    const secret = 'quo"te\\back\tslash';
    const out = logged([secret], (logger) => {
      logger.info({ detail: `before ${secret} after` }, 'one');
      // A JSON document logged as a string: the secret escaped twice.
      logger.info({ body: JSON.stringify({ token2: secret }) }, 'two');
    });
    expect(out).not.toContain(JSON.stringify(secret).slice(1, -1));
    expect(out).not.toContain(JSON.stringify(JSON.stringify(secret).slice(1, -1)).slice(1, -1));
    expect(out).not.toContain('back');
    expect(out.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { detail?: string }).detail)[0]).toBe('before **** after');
  });

  it('masks fields named for a secret whatever the value, and leaves short secrets out of text matching', () => {
    const out = logged(['abc'], (logger) => logger.info({ token: 'abc', writeKey: 'k', cfg: { password: 'p', sharedSecret: 's' }, note: 'abc is a word' }, 'short'));
    const line = JSON.parse(out) as Record<string, unknown>;
    expect(line).toMatchObject({ token: '****', writeKey: '****', cfg: { password: '****', sharedSecret: '****' }, note: 'abc is a word' });
  });

  it('picks up a new list of secrets (a config reload)', () => {
    let secrets: readonly string[] = ['first-secret-aaaa'];
    const { logger, lines } = capture(() => secrets);
    logger.info('first-secret-aaaa second-secret-bbb');
    secrets = ['second-secret-bbb'];
    logger.info('first-secret-aaaa second-secret-bbb');
    expect(lines[0]).toContain('**** second-secret-bbb');
    expect(lines[1]).toContain('first-secret-aaaa ****');
  });

  it('lists each secret in every form, longest first, skipping short ones', () => {
    expect(secretForms(['a"b-long-secret', 'short'])).toEqual(['a\\\\\\"b-long-secret', 'a\\"b-long-secret', 'a"b-long-secret']);
  });
});
