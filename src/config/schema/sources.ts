// `sources` (docs/configuration.md#sources): where calls come from, where they go, which
// events pass, what a source may write, and its tracking plan.

import type { SourcePlanConfig } from '../../tracking-plans/index.js';
import { checkPositiveNumber, oneOf } from './basic-checks.js';
import { isPlainObject } from './check.js';
import { checkSize } from './quantities.js';
import { formatSize } from '../size.js';
import { field, idList, nonEmptyText, secretText, strictObject } from './zod-fields.js';

/** Exactly one of the two lists is set. */
export interface TrackFilter {
  blockEvents?: string[];
  allowEvents?: string[];
}

export interface SourceConfig {
  id: string;
  writeKey?: string;
  destinations: string[];
  trackFilter?: TrackFilter;
  /** What the source may write through one gateway process (src/limits/source-limits.ts). */
  limits: SourceLimitsConfig;
  /** The tracking plan its calls are checked against, and what a violation does (docs/tracking-plans.md). */
  trackingPlan?: SourcePlanConfig;
}

/** `sources[].limits` (docs/configuration.md#sources). */
export interface SourceLimitsConfig {
  /** Calls per second (each call of a batch counts). */
  callsPerSecond: number;
  /** Bytes of records written per second (keys and values in `calls` and `calls.invalid`). */
  bytesPerSecond: number;
  /** Seconds' worth of each rate the source may spend at once. */
  burst: number;
}

/**
 * The limits of a source that sets none: far above what one site's browsers send
 * through one gateway process, far below what a leaked write key could write.
 */
export const DEFAULT_SOURCE_LIMITS: Readonly<SourceLimitsConfig> = { callsPerSecond: 2_000, bytesPerSecond: 8 * 1_048_576, burst: 5 };

const trackFilterSchema = strictObject({
  blockEvents: idList.optional(),
  allowEvents: idList.optional(),
}).superRefine(
  (filter, ctx) => {
    const given = [filter.blockEvents, filter.allowEvents].filter((l) => l !== undefined).length;
    if (given !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `give exactly one of blockEvents or allowEvents, got ${given === 0 ? 'neither' : 'both'}`,
      });
    }
  },
  // Run even when a list inside has a bad entry, so both problems show at once.
  { when: (payload) => isPlainObject(payload.value) },
).meta({ minProperties: 1, maxProperties: 1 });

/** The highest `callsPerSecond` and `bytesPerSecond` a source's limits may give, and the longest `burst` (seconds). */
const MAX_SOURCE_CALLS_PER_SECOND = 1_000_000;
const MAX_SOURCE_BYTES_PER_SECOND = 1_024 * 1_048_576;
const MAX_SOURCE_BURST_SECONDS = 3_600;

const sourceLimitsSchema = strictObject({
  callsPerSecond: field(checkPositiveNumber(MAX_SOURCE_CALLS_PER_SECOND)).prefault(DEFAULT_SOURCE_LIMITS.callsPerSecond),
  bytesPerSecond: field(checkSize(1_024, MAX_SOURCE_BYTES_PER_SECOND)).prefault(formatSize(DEFAULT_SOURCE_LIMITS.bytesPerSecond)),
  burst: field(checkPositiveNumber(MAX_SOURCE_BURST_SECONDS)).prefault(DEFAULT_SOURCE_LIMITS.burst),
});

export const sourceSchema = strictObject({
  id: nonEmptyText,
  writeKey: secretText.optional(),
  destinations: idList.prefault([]),
  trackFilter: trackFilterSchema.optional(),
  limits: sourceLimitsSchema.prefault({}),
  trackingPlan: strictObject({
    id: nonEmptyText,
    mode: field(oneOf(['observe', 'omit', 'block'] as const)).prefault('observe'),
  }).optional(),
});
