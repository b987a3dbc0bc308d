// A throw-away PKI made at test time with openssl: a CA, a server certificate for
// 127.0.0.1 and client certificates it signed, and one it did not. Files in a temporary
// folder, removed by `remove()`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  dir: string;
  /** Paths of PEM files. */
  ca: { cert: string };
  server: { cert: string; key: string };
  client: { cert: string; key: string };
  /** Signed by its own key, not by the CA. */
  stranger: { cert: string; key: string };
  read(path: string): Buffer;
  remove(): void;
}

function openssl(args: string[]): void {
  execFileSync('/usr/bin/openssl', args, { stdio: 'ignore' });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-pki-'));
  const at = (name: string) => join(dir, name);
  openssl(['req', '-x509', ...EC, '-keyout', at('ca.key'), '-out', at('ca.crt'), '-days', '2', '-subj', '/CN=switchyard test CA']);
  const issue = (name: string, subject: string, extensions: string) => {
    writeFileSync(at(`${name}.ext`), extensions);
    openssl(['req', ...EC, '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`), '-subj', subject]);
    openssl(['x509', '-req', '-in', at(`${name}.csr`), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at(`${name}.crt`), '-days', '1', '-extfile', at(`${name}.ext`)]);
  };
  issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', '/CN=switchyard-client', 'extendedKeyUsage=clientAuth\n');
  openssl(['req', '-x509', ...EC, '-keyout', at('stranger.key'), '-out', at('stranger.crt'), '-days', '1', '-subj', '/CN=stranger']);
  return {
    dir,
    ca: { cert: at('ca.crt') },
    server: { cert: at('server.crt'), key: at('server.key') },
    client: { cert: at('client.crt'), key: at('client.key') },
    stranger: { cert: at('stranger.crt'), key: at('stranger.key') },
    read: (path) => readFileSync(path),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
