import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES, parseJsonBody, readRequestBody } from '../../../src/gateway/request-body.js';
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
    expect(over).toMatchObject({ ok: false, status: 413, code: 'request_too_large', closeConnection: false });
  });

  it('refuses a declared Content-Length over the limit before reading, closing the connection when it is huge', async () => {
    const stream = new PassThrough();
    const declared = await readRequestBody(stream, { contentEncoding: undefined, contentLength: String(MAX_REQUEST_BYTES + 1) });
    expect(declared).toMatchObject({ ok: false, status: 413, closeConnection: false });
    const huge = await readRequestBody(stream, { contentEncoding: undefined, contentLength: String(1e9) });
    expect(huge).toMatchObject({ ok: false, status: 413, closeConnection: true });
  });

  it('stops inflating a gzip bomb at the limit', async () => {
    // 20 gzip members of 10 MB of zeros each: ~200 KB that inflate to 200 MB.
    const member = gzipSync(Buffer.alloc(10 * 1024 * 1024));
    const bomb = Buffer.concat(Array.from({ length: 20 }, () => member));
    expect(bomb.length).toBeLessThan(MAX_REQUEST_BYTES);
    const result = await readRequestBody(source(bomb), gzip);
    expect(result).toMatchObject({ ok: false, status: 413, code: 'request_too_large' });
    expect(!result.ok && 'message' in result && result.message).toContain('decompressed body is over the limit of 512000 bytes');
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
