import { describe, expect, it } from 'vitest';
import { classifyError, classifyStatus, errorCode, parseRetryAfter, timedOut } from '../../../src/delivery/classify.js';

const NOW = Date.UTC(2026, 4, 1, 12, 0, 0);

function codeError(code: string, message = `failed with ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

describe('classifyStatus', () => {
  it.each([
    [200, '2xx', 'delivered', '200 OK'],
    [201, '2xx', 'delivered', '201 Created'],
    [204, '2xx', 'delivered', '204 No Content'],
    [299, '2xx', 'delivered', '299 Unknown Status'],
    [500, '5xx', 'retryable', '500 Internal Server Error'],
    [502, '5xx', 'retryable', '502 Bad Gateway'],
    [503, '5xx', 'retryable', '503 Service Unavailable'],
    [599, '5xx', 'retryable', '599 Unknown Status'],
    [408, '4xx', 'retryable', '408 Request Timeout'],
    [429, '4xx', 'retryable', '429 Too Many Requests'],
    [400, '4xx', 'permanent', '400 Bad Request'],
    [401, '4xx', 'permanent', '401 Unauthorized'],
    [404, '4xx', 'permanent', '404 Not Found'],
    [410, '4xx', 'permanent', '410 Gone'],
    [413, '4xx', 'permanent', '413 Payload Too Large'],
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
  it.each([
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'],
    ['CERT_HAS_EXPIRED', 'certificate has expired'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"],
  ])('certificate failure %s is a permanent tls failure named as Node names it', (code, message) => {
    expect(classifyError(codeError(code, message), 5000)).toEqual({ outcome: 'tls', verdict: 'permanent', reason: message });
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
