import { createHash } from 'node:crypto';
import pino from 'pino';
import type { Logger } from 'pino';

export type { Logger };

/**
 * pino JSON to stdout. Secret values (shared secrets, write keys, tokens) are
 * scrubbed from every line, whatever field they end up in.
 */
export function createLogger(options: { level: string; secrets?: () => readonly string[]; destination?: pino.DestinationStream }): Logger {
  const scrub = (text: string): string => {
    let out = text;
    for (const secret of options.secrets?.() ?? []) {
      if (secret.length >= 4) out = out.split(secret).join('****');
    }
    return out;
  };
  return pino(
    {
      level: options.level,
      base: { service: 'switchyard' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['sharedSecret', '*.sharedSecret', 'sharedSecrets', '*.sharedSecrets', 'writeKey', '*.writeKey', 'token', '*.token', 'password', '*.password', 'authorization', '*.authorization'],
        censor: '****',
      },
      hooks: {
        streamWrite: scrub,
      },
    },
    options.destination,
  );
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * A user id as it may appear in a log line: the first 16 hex digits of its SHA-256.
 * Logs carry no personal data at info; an operator who has the id can still find the
 * line (`printf %s "$USER_ID" | sha256sum | cut -c1-16`).
 */
export function userHashForLog(userId: string): string {
  return createHash('sha256').update(userId, 'utf8').digest('hex').slice(0, 16);
}
