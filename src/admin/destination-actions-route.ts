// `POST /v1/destinations/<id>/enable` and `/disable` (docs/admin-api.md#post-v1destinationsidenable-and-disable):
// a person's transition of a destination's lifecycle, behind the admin token, answered
// once it is read back from `destinations.state` (src/lifecycle/destination-commands.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { DestinationActions, ManualAction } from '../lifecycle/destination-commands.js';
import { authorizeAdmin } from './admin-auth.js';
import { MAX_ADMIN_BODY_BYTES } from './deletions.js';
import { readBody, send } from './respond.js';

const ACTION_PATH = /^\/v1\/destinations\/([^/]+)\/(enable|disable)$/;

/** The destination and action of a path, or undefined when the path is not one of these routes. */
export function destinationActionOf(path: string): { destination: string; action: ManualAction } | undefined {
  const match = ACTION_PATH.exec(path);
  if (match === null) return undefined;
  try {
    return { destination: decodeURIComponent(match[1]!), action: match[2] as ManualAction };
  } catch {
    return undefined;
  }
}

/** The optional body: `{"reason"?: string, "by"?: string}` (an empty body is fine). */
function parseBody(body: Buffer): { ok: true; reason?: string; by?: string } | { ok: false; message: string } {
  if (body.length === 0) return { ok: true };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, message: 'body is not JSON; send {"reason":"…"} or nothing' };
  }
  const { reason, by } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { reason?: unknown; by?: unknown };
  const textOrAbsent = (v: unknown) => v === undefined || (typeof v === 'string' && v.length <= 500);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !textOrAbsent(reason) || !textOrAbsent(by)) {
    return { ok: false, message: 'expected {"reason"?: string of at most 500 characters, "by"?: string (who asks; kept with the state)}' };
  }
  return { ok: true, ...(typeof reason === 'string' && reason !== '' ? { reason } : {}), ...(typeof by === 'string' && by !== '' ? { by } : {}) };
}

export async function serveDestinationAction(
  req: IncomingMessage,
  res: ServerResponse,
  route: { destination: string; action: ManualAction },
  options: { token: () => string | undefined; actions: DestinationActions | undefined; logger: Logger },
): Promise<void> {
  const path = `/v1/destinations/${encodeURIComponent(route.destination)}/${route.action}`;
  if (req.method !== 'POST') {
    send(res, 405, { success: false, code: 'method_not_allowed', message: `use POST ${path}` }, { allow: 'POST' });
    return;
  }
  if (!authorizeAdmin(req, res, options.token())) return;
  if (options.actions === undefined) {
    send(res, 503, { success: false, code: 'unavailable', message: 'destination states are not served by this process' });
    return;
  }
  const body = await readBody(req, MAX_ADMIN_BODY_BYTES);
  if (body === undefined) {
    send(res, 413, { success: false, code: 'too_large', message: `body over ${MAX_ADMIN_BODY_BYTES} bytes; send {"reason":"…"}` });
    return;
  }
  const parsed = parseBody(body);
  if (!parsed.ok) {
    send(res, 400, { success: false, code: 'invalid_request', message: parsed.message });
    return;
  }
  // NOTE: whoever holds the admin token; a caller may say who it is (the console sends "console").
  const by = parsed.by === undefined ? 'admin API' : `${parsed.by} (admin API)`;
  let outcome;
  try {
    outcome = await options.actions.handle(route.action, route.destination, by, parsed.reason);
  } catch (error) {
    options.logger.error({ err: error, destination: route.destination, action: route.action }, 'could not write a destination state change to Kafka');
    send(res, 503, { success: false, code: 'kafka_unavailable', message: 'could not write the change to Kafka (destinations.state); retry later' }, { 'retry-after': '5' });
    return;
  }
  switch (outcome.result) {
    case 'changed':
      options.logger.info({ destination: route.destination, action: route.action, by, reason: parsed.reason }, `destination ${route.destination}: ${route.action}d through the admin API`);
      send(res, 200, { success: true, state: outcome.lifecycle.state, event: outcome.event, ...(outcome.note === undefined ? {} : { note: outcome.note }) });
      return;
    case 'unchanged':
      send(res, 409, { success: false, code: 'unchanged', state: outcome.lifecycle.state, message: outcome.message });
      return;
    case 'unknown_destination':
      send(res, 404, { success: false, code: 'unknown_destination', message: outcome.message });
      return;
    default:
      send(res, 504, { success: false, code: 'not_confirmed', message: outcome.message });
  }
}
