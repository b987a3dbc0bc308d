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
