export {
  CALL_TYPES,
  isPlainObject,
  MAX_CALL_BYTES,
  MAX_NESTING_DEPTH,
  parseCallBytes,
  validateCall,
  withMessageId,
} from './call.js';
export type { Call, CallType, CallWithMessageId, InvalidReason, ParseResult } from './call.js';
export { BODY_VERSION, bodyObject, renderAudienceIdentify, renderBody, renderDeleteBody, routingKey } from './render.js';
export type { AudienceIdentify } from './render.js';
export { signBody } from './signature.js';
export { MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, formatTimestamp, parseTimestamp } from './timestamp.js';
