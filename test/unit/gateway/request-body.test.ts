import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES, bodyDeadlineMs, parseJsonBody, readRequestBody } from '../../../src/gateway/request-body.js';
import type { BodyResult } from '../../../src/gateway/request-body.js';

function source(...chunks: Buffer[]): Readable {
  return Readable.from(chunks, { objectMode: false });
}

const plain = { contentEncoding: undefined, contentLength: undefined };
const gzip = { contentEncoding: 'gzip', contentLength: undefined };

function bytesOf(result: BodyResult): Buffer {
  if (!result.ok) throw new Error(`expected a body, got ${JSON.stringify(result)}`);
  return result.bytes;
}

describe('readRequestBody', () => {
  it('reads a plain body in chunks', async () => {
    const result = await readRequestBody(source(Buffer.from('{"a"'), Buffer.from(':1}')), plain);
    expect(bytesOf(result).toString()).toBe('{"a":1}');
  });

  it('decompresses a gzip body (and x-gzip, any case)', async () => {
    const text = JSON.stringify({ batch: [{ type: 'identify', userId: 'u' }] });
    const packed = gzipSync(text);
    expect(bytesOf(await readRequestBody(source(packed.subarray(0, 5), packed.subarray(5)), gzip)).toString()).toBe(text);
    expect(bytesOf(await readRequestBody(source(packed), { contentEncoding: 'X-GZIP', contentLength: undefined })).toString()).toBe(text);
  });

  it('accepts a body of exactly the limit and refuses one byte more', async () => {
    expect(bytesOf(await readRequestBody(source(Buffer.alloc(MAX_REQUEST_BYTES, 0x20)), plain))).toHaveLength(MAX_REQUEST_BYTES);
    const over = await readRequestBody(source(Buffer.alloc(MAX_REQUEST_BYTES), Buffer.alloc(1)), plain);
    expect(over).toMatchObject({ ok: false, status: 413, code: 'request_too_large' });
  });

  it('refuses a declared Content-Length over the limit before reading', async () => {
    const stream = new PassThrough();
    const declared = await readRequestBody(stream, { contentEncoding: undefined, contentLength: String(MAX_REQUEST_BYTES + 1) });
    expect(declared).toMatchObject({ ok: false, status: 413 });
    const huge = await readRequestBody(stream, { contentEncoding: undefined, contentLength: String(1e9) });
    expect(huge).toMatchObject({ ok: false, status: 413 });
  });

  it('stops inflating a gzip bomb at the limit', async () => {
    // 20 gzip members of 10 MB of zeros each: ~200 KB that inflate to 200 MB, arriving
    // at once (so the ratio, counted against what arrived, is not what stops it).
    const member = gzipSync(Buffer.alloc(10 * 1024 * 1024));
    const bomb = Buffer.concat(Array.from({ length: 20 }, () => member));
    expect(bomb.length).toBeLessThan(MAX_REQUEST_BYTES);
    const result = await readRequestBody(source(bomb), gzip);
    expect(result).toMatchObject({ ok: false, status: 413, code: 'request_too_large' });
    expect(!result.ok && 'message' in result && result.message).toContain('decompressed body is over the limit of 512000 bytes');
  });

  it('refuses a gzip body that inflates over 100 times its size, past 64 KB (the review\'s 253 bytes that wrote 1 MiB)', async () => {
    const padded = gzipSync(Buffer.from(JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', properties: { pad: ' '.repeat(400 * 1024) } }] })));
    expect(padded.length).toBeLessThan(2_000);
    const refused = await readRequestBody(source(padded), gzip);
    expect(refused).toMatchObject({ ok: false, status: 413, code: 'compression_ratio_too_high' });
    expect(!refused.ok && 'message' in refused && refused.message).toMatch(/^the gzip body inflates more than 100 times its compressed size \(\d+ bytes to over \d+\)/);
    // Under 64 KB inflated, any ratio passes.
    const small = Buffer.from(JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', properties: { pad: ' '.repeat(60 * 1024) } }] }));
    expect(bytesOf(await readRequestBody(source(gzipSync(small)), gzip))).toEqual(small);
    // A batch as the libraries send it (a messageId and timestamp per call) compresses about 16 times.
    const batch = Buffer.from(
      JSON.stringify({ batch: Array.from({ length: 600 }, (_, i) => ({ type: 'track', event: 'Product Viewed', messageId: `m-${i}-${Math.random().toString(36).slice(2)}`, timestamp: new Date(1_700_000_000_000 + i * 997).toISOString(), anonymousId: 'a-1', properties: { product_id: `p-${i % 7}`, price: i % 50 }, context: { library: { name: 'analytics.js', version: '4.1.0' } } })) }),
    );
    expect(batch.length).toBeGreaterThan(100 * 1024);
    expect(bytesOf(await readRequestBody(source(gzipSync(batch)), gzip))).toEqual(batch);
  });

  it('refuses bytes that are not gzip, and a truncated gzip body, with 400', async () => {
    const notGzip = await readRequestBody(source(Buffer.from('{"batch":[]}')), gzip);
    expect(notGzip).toMatchObject({ ok: false, status: 400, code: 'invalid_gzip' });
    const truncated = await readRequestBody(source(gzipSync('{"batch":[]}').subarray(0, 15)), gzip);
    expect(truncated).toMatchObject({ ok: false, status: 400, code: 'invalid_gzip' });
  });

  it('refuses other encodings with 415', async () => {
    const result = await readRequestBody(source(Buffer.from('x')), { contentEncoding: 'br', contentLength: undefined });
    expect(result).toMatchObject({ ok: false, status: 415, code: 'unsupported_encoding' });
  });

  it('reports a client that went away mid-body', async () => {
    const stream = new PassThrough();
    const reading = readRequestBody(stream, plain);
    stream.write('{"batch":');
    stream.destroy();
    expect(await reading).toEqual({ ok: false, aborted: true });
  });
});

describe('the body pace', () => {
  const pace = { firstByteTimeoutMs: 50, minBytesPerSecond: 1000 };

  it.each([
    // [bytes so far, deadline after the start (ms)]
    [0, 50],
    [1000, 1050],
    [2500, 2550],
  ])('with %i bytes the body is too slow %i ms after it started', (bytes, after) => {
    expect(bodyDeadlineMs(10_000, bytes, pace)).toBe(10_000 + after);
  });

  it('gives up on a body whose first byte never comes: 408', async () => {
    const stream = new PassThrough();
    const result = await readRequestBody(stream, plain, pace);
    expect(result).toMatchObject({ ok: false, status: 408, code: 'request_timeout' });
    expect(!result.ok && 'message' in result && result.message).toBe('no byte of the body arrived within 0.05 s of the headers: send the body right after the headers');
  });

  it('gives up on a body that trickles slower than the minimum rate', async () => {
    const stream = new PassThrough();
    const reading = readRequestBody(stream, plain, pace);
    stream.write('{"batch":[');
    const result = await reading;
    expect(result).toMatchObject({ ok: false, status: 408, code: 'request_timeout' });
    expect(!result.ok && 'message' in result && result.message).toBe('the body arrived slower than 1000 bytes a second: send it without pauses');
  });

  it('reads a body that keeps up with the pace', async () => {
    const stream = new PassThrough();
    const reading = readRequestBody(stream, plain, { firstByteTimeoutMs: 5_000, minBytesPerSecond: 1000 });
    stream.write('{"batch":');
    stream.end('[]}');
    expect(bytesOf(await reading).toString()).toBe('{"batch":[]}');
  });
});

describe('parseJsonBody', () => {
  it('parses UTF-8 JSON, a byte order mark ignored', () => {
    expect(parseJsonBody(Buffer.from('\uFEFF{"a":"é"}'))).toEqual({ ok: true, value: { a: 'é' } });
  });

  it.each([
    ['empty', Buffer.alloc(0), /^body is empty/],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /^body is not valid UTF-8/],
    ['not JSON', Buffer.from('{"batch":[}'), /^body is not valid JSON \(.+\): send the calls as one JSON object$/],
  ])('refuses a body that is %s', (_what, bytes, message) => {
    const result = parseJsonBody(bytes);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toMatch(message);
  });
});
