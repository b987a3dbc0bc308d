// `POST /v1/deletions` (docs/kafka.md, docs/admin-api.md): authenticated by the admin
// token, the body checked, then handed to the role's DeletionHandler (the writer of
// `<prefix>deletions` in deletion-requests.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { authorizeAdmin } from './admin-auth.js';
import { readBody, send } from './respond.js';

/** Handles `POST /v1/deletions` once the body is authenticated and parsed. */
export type DeletionHandler = (request: DeletionRequest) => Promise<void>;

export interface DeletionRequest {
  userId: string;
  sourceIds?: string[];
}

export const DELETIONS_PATH = '/v1/deletions';

export const MAX_ADMIN_BODY_BYTES = 64 * 1024;

/** The request in the body, or the 400 answer that says what to send instead. */
function parseDeletionRequest(body: Buffer): { ok: true; request: DeletionRequest } | { ok: false; code: string; message: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, code: 'invalid_json', message: 'body is not JSON; send {"userId":"…","sourceIds":["…"]}' };
  }
  const request = parsed as { userId?: unknown; sourceIds?: unknown };
  const sourceIdsOk =
    request.sourceIds === undefined ||
    (Array.isArray(request.sourceIds) && request.sourceIds.every((id) => typeof id === 'string' && id.length > 0));
  if (typeof parsed !== 'object' || parsed === null || typeof request.userId !== 'string' || request.userId === '' || !sourceIdsOk) {
    return { ok: false, code: 'invalid_request', message: 'expected {"userId": non-empty string, "sourceIds"?: [string, …]}' };
  }
  return {
    ok: true,
    request: { userId: request.userId, ...(request.sourceIds ? { sourceIds: request.sourceIds as string[] } : {}) },
  };
}

/** Answers a request on DELETIONS_PATH, whatever its method. */
export async function serveDeletion(
  req: IncomingMessage,
  res: ServerResponse,
  options: { token: () => string | undefined; deletions: DeletionHandler | undefined; logger: Logger },
): Promise<void> {
  if (req.method !== 'POST') {
    send(res, 405, { success: false, code: 'method_not_allowed', message: 'use POST /v1/deletions' });
    return;
  }
  if (!authorizeAdmin(req, res, options.token())) return;
  if (!options.deletions) {
    send(res, 503, { success: false, code: 'unavailable', message: 'deletions are not handled by this role; call the router or gateway admin port' });
    return;
  }
  const body = await readBody(req, MAX_ADMIN_BODY_BYTES);
  if (!body) {
    send(res, 413, { success: false, code: 'too_large', message: `deletion request over ${MAX_ADMIN_BODY_BYTES} bytes` });
    return;
  }
  const parsed = parseDeletionRequest(body);
  if (!parsed.ok) {
    send(res, 400, { success: false, code: parsed.code, message: parsed.message });
    return;
  }
  try {
    await options.deletions(parsed.request);
  } catch (error) {
    options.logger.error({ err: error }, 'deletion request could not be written to Kafka');
    send(res, 503, { success: false, code: 'kafka_unavailable', message: 'could not write the deletion request to Kafka; retry later' }, { 'retry-after': '5' });
    return;
  }
  send(res, 202, { success: true });
}
