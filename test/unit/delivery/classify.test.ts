import { describe, expect, it } from 'vitest';
import { classifyError, classifyStatus, errorCode, parseRetryAfter, stopOnStatus, timedOut } from '../../../src/delivery/classify.js';
import { BlockedAddressError } from '../../../src/delivery/private-network.js';

const NOW = Date.UTC(2026, 4, 1, 12, 0, 0);

function codeError(code: string, message = `failed with ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

describe('classifyStatus', () => {
  // Segment's rules for its destinations (docs/webhooks.md#delivery-and-retries): 5xx except 501 and 505, 408, 410,
  // 429 and 460 are retried; 501, 505, every other 4xx and any 3xx are permanent.
  it.each([
    [200, '2xx', 'delivered', '200 OK'],
    [201, '2xx', 'delivered', '201 Created'],
    [204, '2xx', 'delivered', '204 No Content'],
    [299, '2xx', 'delivered', '299 Unknown Status'],
    [500, '5xx', 'retryable', '500 Internal Server Error'],
    [501, '5xx', 'permanent', '501 Not Implemented'],
    [502, '5xx', 'retryable', '502 Bad Gateway'],
    [503, '5xx', 'retryable', '503 Service Unavailable'],
    [504, '5xx', 'retryable', '504 Gateway Timeout'],
    [505, '5xx', 'permanent', '505 HTTP Version Not Supported'],
    [506, '5xx', 'retryable', '506 Variant Also Negotiates'],
    [511, '5xx', 'retryable', '511 Network Authentication Required'],
    [599, '5xx', 'retryable', '599 Unknown Status'],
    [408, '4xx', 'retryable', '408 Request Timeout'],
    [410, '4xx', 'retryable', '410 Gone'],
    [429, '4xx', 'retryable', '429 Too Many Requests'],
    [460, '4xx', 'retryable', '460 Client Closed Request'],
    [400, '4xx', 'permanent', '400 Bad Request'],
    [401, '4xx', 'permanent', '401 Unauthorized'],
    [403, '4xx', 'permanent', '403 Forbidden'],
    [404, '4xx', 'permanent', '404 Not Found'],
    [405, '4xx', 'permanent', '405 Method Not Allowed'],
    [409, '4xx', 'permanent', '409 Conflict'],
    [411, '4xx', 'permanent', '411 Length Required'],
    [413, '4xx', 'permanent', '413 Payload Too Large'],
    [422, '4xx', 'permanent', '422 Unprocessable Entity'],
    [428, '4xx', 'permanent', '428 Precondition Required'],
    [431, '4xx', 'permanent', '431 Request Header Fields Too Large'],
    [451, '4xx', 'permanent', '451 Unavailable For Legal Reasons'],
    [461, '4xx', 'permanent', '461 Unknown Status'],
    [499, '4xx', 'permanent', '499 Unknown Status'],
  ] as const)('%i → %s, %s', (status, outcome, verdict, reason) => {
    expect(classifyStatus(status, undefined, NOW)).toEqual({ outcome, verdict, status, reason });
  });

  it.each([301, 302, 307, 308])('a %i redirect is permanent and not followed', (status) => {
    const result = classifyStatus(status, undefined, NOW);
    expect(result.verdict).toBe('permanent');
    expect(result.outcome).toBe('4xx');
    expect(result.reason).toMatch(new RegExp(`^${status} .+ \\(redirects are not followed; configure the final URL\\)$`));
  });

  it('reads Retry-After on retryable answers only', () => {
    expect(classifyStatus(429, '2', NOW).retryAfterMs).toBe(2000);
    expect(classifyStatus(503, '120', NOW).retryAfterMs).toBe(120_000);
    expect(classifyStatus(408, '1', NOW).retryAfterMs).toBe(1000);
    expect(classifyStatus(410, '5', NOW).retryAfterMs).toBe(5000);
    expect(classifyStatus(460, '5', NOW).retryAfterMs).toBe(5000);
    expect(classifyStatus(501, '5', NOW)).not.toHaveProperty('retryAfterMs');
    expect(classifyStatus(400, '2', NOW)).not.toHaveProperty('retryAfterMs');
    expect(classifyStatus(200, '2', NOW)).not.toHaveProperty('retryAfterMs');
    expect(classifyStatus(503, 'soon', NOW)).not.toHaveProperty('retryAfterMs');
  });
});

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['2', 2000],
    [' 30 ', 30_000],
    ['3600', 3_600_000],
    ['Fri, 01 May 2026 12:00:05 GMT', 5000],
    ['Friday, 01-May-26 12:01:00 GMT', 60_000],
    ['Fri, 01 May 2026 11:00:00 GMT', 0],
  ])('%j → %s ms', (header, expected) => {
    expect(parseRetryAfter(header, NOW)).toBe(expected);
  });

  it.each([undefined, '', '-1', '1.5', '+2', 'later', '1e3', '99999999999999999999'])('%j is not a Retry-After', (header) => {
    expect(parseRetryAfter(header, NOW)).toBeUndefined();
  });
});

describe('classifyError', () => {
  it('an address refused by the private-network guard is blocked, permanently, with its reason', () => {
    const error = new BlockedAddressError('localhost', '127.0.0.1', { allowed: false, kind: 'loopback' });
    expect(classifyError(error, 5000)).toEqual({
      outcome: 'blocked',
      verdict: 'permanent',
      reason: 'not sent: localhost resolves to 127.0.0.1, a loopback address; delivery.blockPrivateNetworks refuses it',
    });
    // As undici hands it over when it wraps it.
    expect(classifyError(Object.assign(new Error('connect failed'), { cause: error }), 5000).outcome).toBe('blocked');
  });

  it.each([
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'],
    ['CERT_HAS_EXPIRED', 'certificate has expired'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"],
  ])('certificate failure %s is a permanent tls failure named as Node names it', (code, message) => {
    expect(classifyError(codeError(code, message), 5000)).toEqual({ outcome: 'tls', verdict: 'permanent', reason: message });
  });

  it('a certificate failure is named without the advice about its command line that Node 24 adds', () => {
    const node24 = codeError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate; if the root CA is installed locally, try running Node.js with --use-system-ca');
    expect(classifyError(node24, 5000)).toEqual({ outcome: 'tls', verdict: 'permanent', reason: 'self-signed certificate' });
  });

  it('a TLS handshake failure that is not about the certificate is retryable', () => {
    const result = classifyError(codeError('ERR_SSL_WRONG_VERSION_NUMBER', 'wrong version number'), 5000);
    expect(result).toEqual({ outcome: 'tls', verdict: 'retryable', reason: 'TLS handshake failed: wrong version number' });
  });

  it.each([
    ['ECONNREFUSED', 'connection refused'],
    ['ECONNRESET', 'connection reset by the receiver'],
    ['ENOTFOUND', 'host name not found (DNS)'],
    ['EAI_AGAIN', 'host name lookup failed temporarily (DNS)'],
    ['EHOSTUNREACH', 'host unreachable'],
    ['UND_ERR_SOCKET', 'connection closed by the receiver'],
  ])('connection and DNS error %s is a retryable network failure', (code, reason) => {
    expect(classifyError(codeError(code), 5000)).toEqual({ outcome: 'network', verdict: 'retryable', reason });
  });

  it.each(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])('%s is a retryable timeout', (code) => {
    expect(classifyError(codeError(code), 5000)).toEqual({ outcome: 'timeout', verdict: 'retryable', reason: 'no complete answer within 5s' });
  });

  it('a request that can never be built is permanent', () => {
    expect(classifyError(codeError('UND_ERR_INVALID_ARG', 'invalid header'), 5000)).toEqual({
      outcome: 'network',
      verdict: 'permanent',
      reason: 'request could not be built: invalid header',
    });
  });

  it('finds the code on a cause', () => {
    const wrapped = new Error('fetch failed', { cause: codeError('ECONNREFUSED') });
    expect(errorCode(wrapped)).toBe('ECONNREFUSED');
    expect(classifyError(wrapped, 5000).reason).toBe('connection refused');
  });

  it('an unknown error is retryable and keeps its message and code', () => {
    expect(classifyError(codeError('EWHATEVER', 'odd'), 5000)).toEqual({ outcome: 'network', verdict: 'retryable', reason: 'odd (EWHATEVER)' });
    expect(classifyError(new Error('plain'), 5000)).toEqual({ outcome: 'network', verdict: 'retryable', reason: 'plain' });
    expect(classifyError('a string', 5000).reason).toBe('a string');
  });
});

describe('timedOut', () => {
  it('names the timeout in the unit it was configured in', () => {
    expect(timedOut(5000).reason).toBe('no complete answer within 5s');
    expect(timedOut(1500).reason).toBe('no complete answer within 1500ms');
  });
});

describe('stopOnStatus (settings.retry.stopOn)', () => {
  const gone = new Set([410]);

  it('makes a listed status permanent at once, dropping its Retry-After, and says why', () => {
    const answer = classifyStatus(410, '30', NOW);
    expect(answer).toMatchObject({ verdict: 'retryable', retryAfterMs: 30_000 });
    expect(stopOnStatus(answer, gone)).toEqual({ outcome: '4xx', verdict: 'permanent', status: 410, reason: '410 Gone (listed in settings.retry.stopOn: not retried)' });
    expect(stopOnStatus(classifyStatus(503, undefined, NOW), new Set([503]))).toMatchObject({ outcome: '5xx', verdict: 'permanent', status: 503 });
  });

  it.each([
    ['a status not listed', classifyStatus(503, undefined, NOW)],
    ['an empty list: Segment rules stand', classifyStatus(410, undefined, NOW)],
    ['a 2xx', classifyStatus(200, undefined, NOW)],
    ['an answer already permanent', classifyStatus(404, undefined, NOW)],
    ['a failure without an answer', timedOut(5000)],
  ])('leaves %s as it is', (name, answer) => {
    const stopOn = name.startsWith('an empty') ? new Set<number>() : new Set([410, 200, 404]);
    expect(stopOnStatus(answer, stopOn)).toBe(answer);
  });
});
