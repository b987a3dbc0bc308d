// A real local HTTPS webhook receiver with a self-signed certificate made at test
// time (openssl), to show that such a receiver gets no request at all.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SelfSignedReceiver {
  url(path?: string): string;
  /** HTTP requests that reached the server (after a completed TLS handshake). */
  requests: number;
  /** TCP connections accepted (handshakes attempted). */
  connections: number;
  close(): Promise<void>;
}

/** A certificate for 127.0.0.1 signed by its own key, valid for a day. */
export function selfSignedCertificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-cert-'));
  try {
    execFileSync(
      '/usr/bin/openssl',
      [
        'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
        '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startSelfSignedReceiver(): Promise<SelfSignedReceiver> {
  const receiver = { requests: 0, connections: 0 };
  const server: Server = createServer(selfSignedCertificate(), (_req, res) => {
    receiver.requests += 1;
    res.writeHead(200);
    res.end();
  });
  server.on('connection', () => {
    receiver.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/hook') => `https://127.0.0.1:${port}${path}`,
    get requests() {
      return receiver.requests;
    },
    get connections() {
      return receiver.connections;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
