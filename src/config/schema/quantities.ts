// Durations ("10s", "4h") and sizes ("512KB") as config values: parsed by duration.ts and
// size.ts, checked here against the range a key allows.

import { DURATION_PATTERN, formatDuration, parseDuration } from '../duration.js';
import { formatSize, parseSize, SIZE_PATTERN } from '../size.js';
import { describe, fail, ok, orFromEnv, REQUIRED, withInput } from './check.js';
import type { Checked } from './check.js';

export function checkDuration(value: unknown): Checked<number> {
  if (value === undefined) return fail(REQUIRED);
  const ms = typeof value === 'string' ? parseDuration(value) : undefined;
  if (ms === undefined || ms <= 0) {
    return fail(
      `${describe(value)} is not a duration; write a positive number with a unit ms, s, m, h or d, e.g. "500ms", "10s", "1.5m", "4h", "30d"`,
    );
  }
  return ok(ms);
}
export const DURATION_INPUT = orFromEnv({
  type: 'string',
  pattern: DURATION_PATTERN.source,
  description: 'a duration: a positive number with a unit ms, s, m, h or d, e.g. "500ms", "10s", "1.5m", "4h", "30d"',
});
checkDuration.input = { $ref: '#/$defs/duration' };

export function checkDurationBetween(minMs: number, maxMs: number) {
  return withInput(checkDuration.input!, (value: unknown): Checked<number> => {
    const ms = checkDuration(value);
    if (ms.ok && (ms.value < minMs || ms.value > maxMs)) return fail(`${describe(value)} is outside ${formatDuration(minMs)} to ${formatDuration(maxMs)}; give a duration in that range`);
    return ms;
  });
}

export function checkSize(min: number, max: number) {
  const input = orFromEnv({ type: 'string', pattern: SIZE_PATTERN.source, description: `a size: a number with a unit B, KB or MB (1 KB = 1,024 bytes), from ${formatSize(min)} to ${formatSize(max)}, e.g. "512KB"` });
  return withInput(input, (value: unknown): Checked<number> => {
    if (value === undefined) return fail(REQUIRED);
    const bytes = typeof value === 'string' ? parseSize(value) : undefined;
    if (bytes === undefined) return fail(`${describe(value)} is not a size; write a number with a unit B, KB or MB (1 KB = 1,024 bytes), e.g. "512KB" or "1MB"`);
    if (bytes < min || bytes > max) return fail(`${describe(value)} is outside ${formatSize(min)} to ${formatSize(max)}; give a size in that range`);
    return ok(bytes);
  });
}
