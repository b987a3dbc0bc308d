// A webhook receiver that verifies Switchyard's signatures, with Node's standard
// library only. Run:  WEBHOOK_SECRET=... node receiver.mjs [PORT]
//
// It accepts a request when either signature verifies:
//   X-Signature        lowercase hex HMAC-SHA1 of the raw body, key = the secret as written
//   webhook-signature  Standard Webhooks: "v1,<base64 HMAC-SHA256>" entries, space-separated;
//                      key = base64-decoded secret after "whsec_",
//                      message = "<webhook-id>.<webhook-timestamp>.<raw body>"
// and answers 204; otherwise 401 with the reason. It prints each verified event.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const TOLERANCE_SECONDS = 5 * 60; // Standard Webhooks: refuse replays of old requests
const MAX_BODY_BYTES = 1024 * 1024;

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error('set WEBHOOK_SECRET to the destination\'s sharedSecret, e.g. WEBHOOK_SECRET=whsec_... node receiver.mjs');
  process.exit(1);
}
const port = Number(process.argv[2] ?? process.env.PORT ?? 4000);
const host = process.env.HOST ?? '127.0.0.1';

// The Standard Webhooks key: the base64 after "whsec_". A secret that is not base64
// can still verify X-Signature, which uses the secret's own bytes.
const base64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
const standardKey = /^[A-Za-z0-9+/]+={0,2}$/.test(base64) && base64.length % 4 === 0 ? Buffer.from(base64, 'base64') : undefined;
if (!standardKey) console.log('note: WEBHOOK_SECRET is not base64 (whsec_...), so only X-Signature can verify');

/** Compares in constant time, so the answer's timing tells nothing about the expected value. */
function sameText(a, b) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function checkXSignature(headers, body) {
  const given = headers['x-signature'];
  if (typeof given !== 'string') return undefined;
  const expected = createHmac('sha1', secret).update(body).digest('hex');
  return sameText(expected, given) ? 'ok' : 'X-Signature does not match';
}

function checkStandard(headers, body) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof signatures !== 'string') return undefined;
  if (!standardKey) return 'webhook-signature cannot be checked: WEBHOOK_SECRET is not a whsec_ secret';
  if (typeof id !== 'string' || typeof timestamp !== 'string' || !/^\d+$/.test(timestamp)) {
    return 'webhook-id or webhook-timestamp missing or malformed';
  }
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return 'webhook-timestamp is more than 5 minutes off';
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  const expected = createHmac('sha256', standardKey).update(signed).digest('base64');
  // One entry per secret while the sender rotates; other versions than v1 are skipped.
  const match = signatures.split(' ').some((entry) => entry.startsWith('v1,') && sameText(expected, entry.slice(3)));
  return match ? 'ok' : 'webhook-signature does not match';
}

/** 'ok' with the scheme that verified, or the reasons none did. */
function verify(headers, body) {
  const results = { 'X-Signature': checkXSignature(headers, body), 'Standard Webhooks': checkStandard(headers, body) };
  const verified = Object.keys(results).find((scheme) => results[scheme] === 'ok');
  if (verified) return { ok: true, scheme: verified };
  const reasons = Object.values(results).filter((r) => r !== undefined);
  return { ok: false, reason: reasons.length > 0 ? reasons.join('; ') : 'no X-Signature or webhook-signature header' };
}

function answer(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text === undefined ? undefined : `${text}\n`);
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') return answer(res, 405, 'POST only');
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      answer(res, 413, 'body too large');
      req.destroy();
    } else chunks.push(chunk);
  });
  req.on('end', () => {
    // NOTE: verify the raw bytes as received; parsing and re-serializing could change them.
    const body = Buffer.concat(chunks);
    const result = verify(req.headers, body);
    if (!result.ok) {
      console.log(`refused (${result.reason}): ${req.method} ${req.url}`);
      return answer(res, 401, result.reason);
    }
    console.log(`verified by ${result.scheme}: ${body.toString('utf8')}`);
    answer(res, 204);
  });
});

server.listen(port, host, () => {
  const { address, port: bound } = server.address();
  console.log(`listening on http://${address}:${bound}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
