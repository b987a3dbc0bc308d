// A role's pino logger whose JSON lines a test reads back, parsed, in order
// (src/observability/logger.ts createLogger, with the scrubbing it always does).
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger } from '../../src/observability/logger.js';

export interface CapturedLogs {
  logger: Logger;
  /** Every line written so far, parsed. */
  readonly lines: Record<string, unknown>[];
  /** How many lines so far have `msg`. */
  count(msg: string): number;
}

/**
 * `onLine` runs inside the logger's write, for each line as it is written (pino writes
 * synchronously): what the role looks like at the very moment it logs.
 */
export function captureLogs(level = 'info', onLine?: (line: Record<string, unknown>) => void): CapturedLogs {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) {
        if (!text.startsWith('{')) continue;
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        onLine?.(line);
      }
      done();
    },
  });
  return { logger: createLogger({ level, destination: sink }), lines, count: (msg) => lines.filter((line) => line.msg === msg).length };
}
