// Every answer the gateway writes to a request goes through here: counted in
// switchyard_gateway_requests_total and, when refused, logged with the reason.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import { errorBody } from './answers.js';
import type { GatewayErrorCode } from './answers.js';

export interface Responder {
  /** Writes the answer (unless the response is already under way or gone) and counts it. */
  answer(res: ServerResponse, routeLabel: string, status: number, body: string, headers?: OutgoingHttpHeaders): void;
  /** An error answer `{"success":false,"code","message"}`, logged. */
  fail(res: ServerResponse, routeLabel: string, status: number, code: GatewayErrorCode, message: string, headers?: OutgoingHttpHeaders): void;
}

export function createResponder(metrics: Metrics, logger: Logger): Responder {
  const answer: Responder['answer'] = (res, routeLabel, status, body, headers = {}) => {
    metrics.gatewayRequests.inc({ route: routeLabel, status: String(status) });
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...headers,
    });
    res.end(body);
  };

  const fail: Responder['fail'] = (res, routeLabel, status, code, message, headers = {}) => {
    // NOTE: a refused request is logged with the reason the client got, at info, so an
    // operator sees why a producer's calls do not arrive. The messages never quote a
    // write key or an Authorization header (configured keys are scrubbed anyway).
    if (status >= 500) logger.warn({ route: routeLabel, status, code }, message);
    else logger.info({ route: routeLabel, status, code }, `request refused: ${message}`);
    // NOTE: every refusal closes its connection (docs/operations.md#threat-model): a
    // refused client holds no slot afterwards (a 404 used to leave it open for 65 s), and
    // a body left unread is not waited for.
    answer(res, routeLabel, status, errorBody(code, message), { ...headers, connection: 'close' });
  };

  return { answer, fail };
}
