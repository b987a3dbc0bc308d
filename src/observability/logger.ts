import { createHash } from 'node:crypto';
import pino from 'pino';
import type { Logger } from 'pino';

export type { Logger };

/**
 * Secrets shorter than this are left to the redact paths (see config/mask.ts,
 * MIN_SCRUBBED_SECRET_LENGTH): searched for as text they would garble the logs.
 */
const MIN_SCRUBBED_LENGTH = 8;

/** Field names whose values are masked wherever they appear, whatever their length. */
const REDACTED_FIELDS = ['sharedSecret', 'sharedSecrets', 'writeKey', 'token', 'password', 'authorization', 'passphrase', 'clientSecret', 'access_token'];

/**
 * The texts a secret may take in a log line: as written, and as JSON escapes it once
 * (a `"` or `\` in the secret, a control character) and twice (a JSON document logged
 * inside a string field). Longest first, as secretsOf orders them.
 */
export function secretForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SCRUBBED_LENGTH) continue;
    const once = JSON.stringify(secret).slice(1, -1);
    forms.add(secret).add(once).add(JSON.stringify(once).slice(1, -1));
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * pino JSON to stdout. Secret values (shared secrets, write keys, tokens, the secret
 * parts of webhook URLs) are scrubbed from every line, whatever field they end up in,
 * in each form JSON may give them; fields named like a secret are masked whatever
 * their value (docs/operations.md#security).
 */
export function createLogger(options: { level: string; secrets?: () => readonly string[]; destination?: pino.DestinationStream }): Logger {
  // The forms are worked out once per list of secrets (a config reload makes a new list).
  let listed: readonly string[] | undefined;
  let forms: string[] = [];
  const scrub = (text: string): string => {
    const secrets = options.secrets?.() ?? [];
    if (secrets !== listed) {
      listed = secrets;
      forms = secretForms(secrets);
    }
    let out = text;
    for (const form of forms) {
      if (out.includes(form)) out = out.split(form).join('****');
    }
    return out;
  };
  return pino(
    {
      level: options.level,
      base: { service: 'switchyard' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: REDACTED_FIELDS.flatMap((field) => [field, `*.${field}`]),
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
