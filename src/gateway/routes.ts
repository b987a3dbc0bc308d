/**
 * The gateway's routes (docs/http-api.md): Segment's tracking API paths.
 *
 * A route's `template` is also its metrics label, so the label set stays fixed
 * whatever paths the internet sends; anything unknown is labelled `other`.
 */
import type { CallType } from '../calls/index.js';
import { CALL_TYPES } from '../calls/index.js';

/** `batch`: a `{"batch":[…]}` body; a call type: one call whose type the path gives when the body lacks it. */
export type RouteKind = 'batch' | CallType;

export interface Route {
  template: string;
  kind: RouteKind;
}

/** The metrics label of requests that match no route. */
export const OTHER_ROUTE_LABEL = 'other';

const ROUTES: ReadonlyMap<string, Route> = new Map<string, Route>([
  ['/v1/batch', { template: '/v1/batch', kind: 'batch' }],
  // The older name of /v1/batch, still used by some client libraries.
  ['/v1/import', { template: '/v1/import', kind: 'batch' }],
  ...CALL_TYPES.map((type): [string, Route] => [`/v1/${type}`, { template: `/v1/${type}`, kind: type }]),
]);

/** Every route path, for the message of a 404. */
export const ROUTE_PATHS: readonly string[] = [...ROUTES.keys()];

/**
 * The route for a request target (`/v1/batch?x=1` → `/v1/batch`), or undefined.
 * The query string is ignored and one trailing slash tolerated, as HTTP clients
 * configured with a base URL ending in "/" produce `/v1/batch/`.
 */
export function matchRoute(target: string | undefined): Route | undefined {
  if (target === undefined) return undefined;
  const query = target.indexOf('?');
  let path = query === -1 ? target : target.slice(0, query);
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return ROUTES.get(path);
}
