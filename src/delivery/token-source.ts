// A destination's OAuth2 token (`settings.auth.oauth2`, docs/webhooks.md#authentication):
// cached until its expiry minus a margin (oauth2-token.ts), one request to the token
// endpoint in flight however many deliveries wait for it, and a forced renewal when a
// receiver answers 401 to the token in use.
import { printableUrl } from '../config/mask.js';
import type { OAuth2Config } from '../config/schema.js';
import type { ConnectionProfile, FormAnswer, WebhookTarget } from './http-sender.js';
import { webhookTarget } from './http-sender.js';
import { readTokenAnswer, tokenRequest } from './oauth2-token.js';
import type { TokenOutcome } from './oauth2-token.js';

/** Posts the token request (the HTTP sender's `postForm`: same pool, same address guard). */
export type PostForm = (target: WebhookTarget, body: string, headers: Record<string, string>) => Promise<FormAnswer>;

/**
 * After a failed token request, the failure is the answer for this long without a new
 * request. NOTE: without it, every event of a busy destination would ask a token
 * endpoint that is down once more, one after the other; its events go to their retry
 * tier meanwhile all the same.
 */
export const FAILURE_HOLD_MS = 1_000;

export interface TokenSourceOptions {
  config: OAuth2Config;
  userAgent: string;
  postForm: PostForm;
  /** Each token request's result (`switchyard_auth_token_requests_total`). */
  counted: (result: 'issued' | 'failed') => void;
  /** The destination's TLS options and egress proxy: the token endpoint is reached the same way as its receivers. */
  connection?: ConnectionProfile | undefined;
  now?: () => number;
}

export class TokenSource {
  private readonly target: WebhookTarget;
  private readonly endpoint: string;
  private readonly now: () => number;
  private current: TokenOutcome | undefined;
  /** A token in use until then; a failure, answered until then. */
  private until = 0;
  private inFlight: Promise<TokenOutcome> | undefined;

  constructor(private readonly options: TokenSourceOptions) {
    this.target = webhookTarget(options.config.tokenUrl, options.connection);
    this.endpoint = printableUrl(options.config.tokenUrl);
    this.now = options.now ?? Date.now;
  }

  /** The token to send now, without waiting, when there is one (the common case); else undefined: call `token()`. */
  fresh(): string | undefined {
    return this.current?.ok === true && this.now() < this.until ? this.current.token : undefined;
  }

  /** The token to send: the cached one while it is fresh, else a new one (one request in flight at a time). */
  token(): Promise<TokenOutcome> {
    if (this.current !== undefined && this.now() < this.until) return Promise.resolve(this.current);
    return this.renew();
  }

  /**
   * A receiver answered 401 to `rejected`: a new token, unless it was replaced already
   * (another request saw the 401 first, or the token was renewed meanwhile). NOTE: a
   * renewal in flight is joined whatever it was started for: 64 requests answered 401
   * at once make one token request.
   */
  afterRejection(rejected: string): Promise<TokenOutcome> {
    if (this.inFlight !== undefined) return this.inFlight;
    if (this.current?.ok === true && this.current.token !== rejected && this.now() < this.until) return Promise.resolve(this.current);
    if (this.current?.ok === false && this.now() < this.until) return Promise.resolve(this.current);
    return this.renew();
  }

  private renew(): Promise<TokenOutcome> {
    this.inFlight ??= this.request().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async request(): Promise<TokenOutcome> {
    const { config, userAgent, postForm, counted } = this.options;
    const { body, headers } = tokenRequest(config, userAgent);
    const requestedAt = this.now();
    const answer = await postForm(this.target, body, headers);
    const outcome: TokenOutcome =
      'failure' in answer ? { ok: false, reason: `token endpoint ${this.endpoint}: ${answer.failure.reason}` } : readTokenAnswer(this.endpoint, answer.status, answer.body, requestedAt);
    counted(outcome.ok ? 'issued' : 'failed');
    this.current = outcome;
    this.until = outcome.ok ? outcome.useUntilMs : this.now() + FAILURE_HOLD_MS;
    return outcome;
  }
}

/**
 * The token source of each destination, kept across config reloads while its
 * `auth.oauth2` settings stay the same (a reload of an unrelated setting does not
 * throw away a good token).
 */
export class TokenSources {
  private readonly byDestination = new Map<string, { json: string; source: TokenSource }>();

  constructor(private readonly make: (destinationId: string, config: OAuth2Config, connection: ConnectionProfile | undefined) => TokenSource) {}

  of(destinationId: string, config: OAuth2Config, connection?: ConnectionProfile): TokenSource {
    const json = JSON.stringify([config, connection?.key ?? null]);
    const known = this.byDestination.get(destinationId);
    if (known?.json === json) return known.source;
    const source = this.make(destinationId, config, connection);
    this.byDestination.set(destinationId, { json, source });
    return source;
  }

  /** Forgets the destinations not in `ids` (removed, disabled, or no longer on oauth2). */
  keepOnly(ids: ReadonlySet<string>): void {
    for (const id of [...this.byDestination.keys()]) if (!ids.has(id)) this.byDestination.delete(id);
  }
}
