// `GET /v1/destinations` (docs/admin-api.md#get-v1destinations): every configured
// destination with its health, failing first, behind the admin token.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authorizeAdmin } from './admin-auth.js';
import type { DestinationsDocument } from './answers.js';
import { send } from './respond.js';

export const DESTINATIONS_PATH = '/v1/destinations';

export async function serveDestinations(
  req: IncomingMessage,
  res: ServerResponse,
  options: { token: () => string | undefined; destinations: (() => Promise<DestinationsDocument>) | undefined },
): Promise<void> {
  if (req.method !== 'GET') {
    send(res, 405, { success: false, code: 'method_not_allowed', message: `use GET ${DESTINATIONS_PATH}` }, { allow: 'GET' });
    return;
  }
  if (!authorizeAdmin(req, res, options.token())) return;
  if (options.destinations === undefined) {
    send(res, 503, { success: false, code: 'unavailable', message: 'destinations are not served by this process' });
    return;
  }
  // NOTE: Kafka not answering is part of the document (`kafka.ok: false`), not an error: the rest still helps.
  send(res, 200, await options.destinations());
}
