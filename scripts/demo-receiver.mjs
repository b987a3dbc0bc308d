// A small webhook receiver for the embedded default (`npm start`): prints each
// webhook it gets and whether its X-Signature verified.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

export function startDemoReceiver({ port = 4000, secret, print = (line) => process.stdout.write(`${line}\n`) } = {}) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = raw.toString('utf8');
      const given = req.headers['x-signature'];
      let verdict = 'unsigned';
      if (typeof given === 'string') {
        // Verified over the raw bytes as received, as docs/webhooks.md tells receivers to.
        const expected = secret ? createHmac('sha1', secret).update(raw).digest('hex') : '';
        const ok = expected.length === given.length && timingSafeEqual(Buffer.from(expected), Buffer.from(given));
        verdict = ok ? 'signature verified' : 'SIGNATURE MISMATCH';
      }
      print(`webhook ${req.method} ${req.url} (${verdict}) ${body}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
