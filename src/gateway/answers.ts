/**
 * The gateway's answer bodies: `{"success":true}` (listing the calls it kept as
 * invalid, if any) or `{"success":false,"code":…,"message":…}` — the fields Segment's
 * client libraries log. Codes are stable; messages say what is wrong and what to do.
 */
import type { InvalidReason } from '../calls/index.js';

export type GatewayErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'invalid_gzip'
  | 'unsupported_encoding'
  | 'request_too_large'
  | 'call_too_large'
  | 'too_many_calls'
  | 'write_too_large'
  | 'rate_limited'
  | 'compression_ratio_too_high'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'kafka_unavailable'
  | 'overloaded'
  | 'shutting_down'
  | 'headers_too_large'
  | 'request_timeout'
  | 'bad_request'
  | 'internal';

export interface InvalidCallNote {
  index: number;
  code: InvalidReason;
  message: string;
}

export const SUCCESS_BODY = '{"success":true}';

export function successBody(invalid: readonly InvalidCallNote[]): string {
  if (invalid.length === 0) return SUCCESS_BODY;
  return JSON.stringify({ success: true, invalid });
}

export function errorBody(code: GatewayErrorCode, message: string): string {
  return JSON.stringify({ success: false, code, message });
}
