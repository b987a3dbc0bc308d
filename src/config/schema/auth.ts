// A destination's `settings.auth` (docs/webhooks.md#authentication): basic, bearer or an
// OAuth 2 client credentials grant.

import { oneOf } from './basic-checks.js';
import { isPlainObject } from './check.js';
import { checkWebhookUrl } from './webhooks.js';
import { field, nonEmptyText, secretText, strictObject } from './zod-fields.js';

/** `settings.auth`: exactly one of its three forms (docs/webhooks.md#authentication). */
export type AuthConfig = { basic: { username: string; password: string } } | { bearer: { token: string } } | { oauth2: OAuth2Config };

/** `settings.auth.oauth2`: the client credentials grant (RFC 6749 section 4.4). */
export interface OAuth2Config {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
  audience?: string;
  /** `body`: client_id and client_secret in the form; `basic`: in an Authorization: Basic header. */
  clientAuth: 'body' | 'basic';
}

const AUTH_KINDS = ['basic', 'bearer', 'oauth2'] as const;

export const authSchema = strictObject({
  basic: strictObject({ username: nonEmptyText, password: secretText }).optional(),
  bearer: strictObject({ token: secretText }).optional(),
  oauth2: strictObject({
    tokenUrl: field(checkWebhookUrl),
    clientId: nonEmptyText,
    clientSecret: secretText,
    scope: nonEmptyText.optional(),
    audience: nonEmptyText.optional(),
    clientAuth: field(oneOf(['body', 'basic'] as const)).prefault('body'),
  }).optional(),
})
  .superRefine(
    (auth, ctx) => {
      const given = AUTH_KINDS.filter((kind) => auth[kind] !== undefined);
      if (given.length !== 1) {
        ctx.addIssue({ code: 'custom', message: `give exactly one of ${AUTH_KINDS.join(', ')}, got ${given.length === 0 ? 'none' : given.join(' and ')}` });
      }
    },
    { when: (payload) => isPlainObject(payload.value) },
  )
  .transform((auth): AuthConfig => {
    if (auth.basic !== undefined) return { basic: auth.basic };
    if (auth.bearer !== undefined) return { bearer: auth.bearer };
    const o = auth.oauth2!;
    return {
      oauth2: {
        tokenUrl: o.tokenUrl,
        clientId: o.clientId,
        clientSecret: o.clientSecret,
        clientAuth: o.clientAuth,
        ...(o.scope === undefined ? {} : { scope: o.scope }),
        ...(o.audience === undefined ? {} : { audience: o.audience }),
      },
    };
  })
  .meta({ minProperties: 1, maxProperties: 1 });
