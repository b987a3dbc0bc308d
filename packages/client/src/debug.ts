/** `DEBUG=analytics` logging: plain lines, never the write key. */

/**
 * Whether a `DEBUG` value turns on this library's logging. The value is a list of
 * names separated by commas or spaces, as the `debug` package reads it:
 * `analytics`, `analytics*` or `*` turn it on; `-analytics` turns it off.
 */
export function debugEnabled(value: string | undefined): boolean {
  if (value === undefined) return false;
  let enabled = false;
  for (const name of value.split(/[\s,]+/)) {
    if (name === 'analytics' || name === 'analytics*' || name === 'analytics:*' || name === '*') enabled = true;
    else if (name === '-analytics' || name === '-analytics*' || name === '-analytics:*') return false;
  }
  return enabled;
}

export type DebugLog = (message: string) => void;

/**
 * A log function writing `analytics <ISO time> <message>` lines to `sink`, or doing
 * nothing when disabled.
 * NOTE: every secret is cut out of every line, whatever its origin: a server's error
 * message may echo the write key back, and that text is logged.
 */
export function createDebugLog(enabled: boolean, sink: (line: string) => void, secrets: readonly string[]): DebugLog {
  if (!enabled) return () => undefined;
  return (message) => {
    try {
      sink(`analytics ${new Date().toISOString()} ${redact(message, secrets)}`);
    } catch {
      // A logger that throws must not stop the queue that called it.
    }
  };
}

/** The text with every non-empty secret replaced by `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret !== '') out = out.split(secret).join('[redacted]');
  }
  return out;
}

export function stderrSink(line: string): void {
  process.stderr.write(`${line}\n`);
}
