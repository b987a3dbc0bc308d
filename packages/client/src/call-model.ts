/**
 * The call model the gateway and the router apply (the daemon's `src/calls`), used
 * here so that a call this client accepts is exactly one the gateway accepts.
 *
 * NOTE: the daemon owns these modules. This file and kafka-transport.ts (the daemon's
 * guard for @platformatic/kafka's producer) are the package's only reaches outside
 * it. The package build (scripts/build.mjs) inlines them into
 * dist/index.js, so the published package depends on nothing; no type from them
 * appears in the package's declarations.
 */
export { isPlainObject, MAX_CALL_BYTES, validateCall } from '../../../src/calls/call.js';
export { formatTimestamp, parseTimestamp } from '../../../src/calls/timestamp.js';
