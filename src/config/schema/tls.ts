// A destination's `settings.tls` (docs/webhooks.md#tls): its client certificate, CA and
// TLS options; the files are read by tls-files.ts when the config is loaded.

import { oneOf } from './basic-checks.js';
import { isPlainObject } from './check.js';
import { field, nonEmptyText, strictObject } from './zod-fields.js';

/** `settings.tls`: PEM files by path, read when the config is loaded (load.ts) into `material`. */
export interface ClientTlsConfig {
  clientCert?: string;
  clientKey?: string;
  ca?: string;
  serverName?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** What the files held when the config was loaded; set by the loader, never written in YAML. */
  material?: TlsMaterial;
}

/** The PEM text of `settings.tls`'s files, and when the client certificate expires. */
export interface TlsMaterial {
  cert?: string;
  key?: string;
  ca?: string;
  certExpiresAtMs?: number;
}

export const tlsSchema = strictObject({
  clientCert: nonEmptyText.optional(),
  clientKey: nonEmptyText.optional(),
  ca: nonEmptyText.optional(),
  serverName: nonEmptyText.optional(),
  minVersion: field(oneOf(['TLSv1.2', 'TLSv1.3'] as const)).optional(),
})
  .superRefine(
    (tls, ctx) => {
      if ((tls.clientCert === undefined) !== (tls.clientKey === undefined)) {
        ctx.addIssue({ code: 'custom', path: [tls.clientCert === undefined ? 'clientCert' : 'clientKey'], message: 'clientCert and clientKey go together: give the path of both PEM files, or of neither' });
      }
    },
    { when: (payload) => isPlainObject(payload.value) },
  )
  .transform((tls): ClientTlsConfig => {
    const out: ClientTlsConfig = {};
    for (const key of ['clientCert', 'clientKey', 'ca', 'serverName', 'minVersion'] as const) if (tls[key] !== undefined) Object.assign(out, { [key]: tls[key] });
    return out;
  })
  .meta({ minProperties: 1 });
