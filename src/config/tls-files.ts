// The PEM files of a destination's `settings.tls` (docs/webhooks.md#tls), read when the
// config is loaded and at every reload (Kubernetes mounts Secrets as files): checked
// here so that a missing file, a key that is not the certificate's, or text that is not
// PEM is refused with its path rather than failing every handshake later.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { ClientTlsConfig, Problem, TlsMaterial } from './schema.js';

export type TlsRead = { ok: true; material: TlsMaterial } | { ok: false; problems: Problem[] };

/** Reads and checks the files of `tls`; relative paths are taken from `baseDir` (the config file's folder). */
export function readTlsMaterial(tls: ClientTlsConfig, baseDir: string): TlsRead {
  const problems: Problem[] = [];
  const read = (key: 'clientCert' | 'clientKey' | 'ca'): string | undefined => {
    const path = tls[key];
    if (path === undefined) return undefined;
    const full = isAbsolute(path) ? path : resolve(baseDir, path);
    try {
      return readFileSync(full, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : `cannot be read (${code ?? (error as Error).message})`;
      problems.push({ path: [key], message: `${full}: ${why}; mount the file there or fix the path` });
      return undefined;
    }
  };
  const certText = read('clientCert');
  const keyText = read('clientKey');
  const caText = read('ca');
  const material: TlsMaterial = {};
  let cert: X509Certificate | undefined;
  if (certText !== undefined) {
    try {
      cert = new X509Certificate(certText);
      material.cert = certText;
      material.certExpiresAtMs = Date.parse(cert.validTo);
    } catch {
      problems.push({ path: ['clientCert'], message: `${tls.clientCert}: is not a PEM certificate ("-----BEGIN CERTIFICATE-----")` });
    }
  }
  if (keyText !== undefined) {
    try {
      const key = createPrivateKey(keyText);
      material.key = keyText;
      // NOTE: the key is never quoted; only whether it belongs to the certificate.
      if (cert !== undefined && !cert.checkPrivateKey(key)) problems.push({ path: ['clientKey'], message: `${tls.clientKey}: is not the private key of the certificate in ${tls.clientCert}; give the key the certificate was issued for` });
    } catch {
      problems.push({ path: ['clientKey'], message: `${tls.clientKey}: is not an unencrypted PEM private key ("-----BEGIN PRIVATE KEY-----"); an encrypted key is not supported` });
    }
  }
  if (caText !== undefined) {
    try {
      new X509Certificate(caText);
      material.ca = caText;
    } catch {
      problems.push({ path: ['ca'], message: `${tls.ca}: is not a PEM certificate ("-----BEGIN CERTIFICATE-----")` });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, material };
}
