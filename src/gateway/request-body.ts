/**
 * Reading a request body within the limits of docs/http-api.md: at most 500 KB after
 * decompression, gzip streamed through zlib so that a small compressed body that
 * inflates to gigabytes (a gzip bomb) stops at the limit instead of exhausting memory;
 * and at a pace (BodyPace), so that a connection trickling its body cannot hold a slot
 * for the whole request timeout.
 */
import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Gunzip } from 'node:zlib';

/** 500 KB: the largest request body, after decompression (docs/http-api.md, the seed's batch limit). */
export const MAX_REQUEST_BYTES = 500 * 1024;

/**
 * A gzip body may inflate at most this many times its compressed size, once past
 * GZIP_RATIO_FREE_BYTES. NOTE: batches as Segment's libraries send them (a random
 * messageId and a timestamp per call) compress far less than this (measured:
 * docs/benchmarks.md#figures-behind-the-code); a 253-byte body that inflates to 500 KB
 * (2,000 times) is a request built to make the gateway write far more than it was sent.
 */
export const MAX_GZIP_RATIO = 100;
/** Bodies that inflate to this much or less are never refused for their ratio. */
export const GZIP_RATIO_FREE_BYTES = 64 * 1024;

/**
 * How fast a body must arrive, as Apache's mod_reqtimeout counts it: the first byte
 * within `firstByteTimeoutMs` of the headers, and by then at least `minBytesPerSecond`
 * on average (each `minBytesPerSecond` bytes received buy one more second). Below it:
 * 408 and the connection closed. The request timeout (30 s) bounds it all.
 */
export interface BodyPace {
  firstByteTimeoutMs: number;
  minBytesPerSecond: number;
}

/**
 * NOTE: 5 s to the first byte and 8 KB/s let a client on a poor mobile link send a full
 * 500 KB batch (EDGE uploads at 20 KB/s and more), while a connection that trickles its
 * body holds a slot for seconds, not for the 30 s request timeout.
 */
export const DEFAULT_BODY_PACE: BodyPace = { firstByteTimeoutMs: 5_000, minBytesPerSecond: 8 * 1024 };

/** When a body that started arriving at `startMs` and has brought `bytes` so far is too slow (epoch ms). */
export function bodyDeadlineMs(startMs: number, bytes: number, pace: BodyPace): number {
  return startMs + pace.firstByteTimeoutMs + (bytes * 1000) / pace.minBytesPerSecond;
}

export type BodyErrorCode = 'request_too_large' | 'compression_ratio_too_high' | 'invalid_gzip' | 'unsupported_encoding' | 'request_timeout';

export type BodyResult =
  | { ok: true; bytes: Buffer }
  | {
      ok: false;
      status: 400 | 408 | 413 | 415;
      code: BodyErrorCode;
      message: string;
    }
  /** The client went away (or the server's request timeout struck) before the body ended. */
  | { ok: false; aborted: true };

export interface BodyHead {
  contentEncoding: string | undefined;
  contentLength: string | undefined;
}

type Encoding = 'identity' | 'gzip';

function encodingOf(header: string | undefined): Encoding | undefined {
  const value = header?.trim().toLowerCase() ?? '';
  if (value === '' || value === 'identity') return 'identity';
  if (value === 'gzip' || value === 'x-gzip') return 'gzip';
  return undefined;
}

function tooLarge(what: string): BodyResult {
  return {
    ok: false,
    status: 413,
    code: 'request_too_large',
    message: `${what} over the limit of ${MAX_REQUEST_BYTES} bytes (500 KB) per request: send fewer calls per batch`,
  };
}

/**
 * Reads `source` (an IncomingMessage) to its end, decompressing gzip, within
 * {@link MAX_REQUEST_BYTES}. Never destroys the source: on a refusal it is switched to
 * discarding what still arrives while the answer is written; the answer closes the
 * connection (src/gateway/responder.ts).
 */
export function readRequestBody(source: Readable, head: BodyHead, pace: BodyPace = DEFAULT_BODY_PACE, limitBytes = MAX_REQUEST_BYTES): Promise<BodyResult> {
  const encoding = encodingOf(head.contentEncoding);
  if (encoding === undefined) {
    return Promise.resolve({
      ok: false,
      status: 415,
      code: 'unsupported_encoding',
      message: `Content-Encoding ${JSON.stringify(head.contentEncoding?.slice(0, 40))} is not supported: send the body uncompressed or with Content-Encoding: gzip`,
    });
  }
  const declared = head.contentLength === undefined ? undefined : Number(head.contentLength);
  if (declared !== undefined && declared > limitBytes) {
    const what = encoding === 'gzip' ? `compressed body of ${declared} bytes is` : `body of ${declared} bytes is`;
    return Promise.resolve(tooLarge(what));
  }

  return new BodyReader(source, encoding === 'gzip', limitBytes, pace).read();
}

/** One body being read: the listeners on the request (and on gunzip) and what they share. */
class BodyReader {
  private readonly chunks: Buffer[] = [];
  private rawBytes = 0;
  private bodyBytes = 0;
  private settled = false;
  private ended = false;
  private readonly gunzip: Gunzip | undefined;
  private resolve: (result: BodyResult) => void = () => undefined;
  private readonly startedMs = Date.now();
  private paceTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly source: Readable,
    gzip: boolean,
    private readonly limitBytes: number,
    private readonly pace: BodyPace,
  ) {
    this.gunzip = gzip ? createGunzip() : undefined;
  }

  read(): Promise<BodyResult> {
    return new Promise<BodyResult>((resolve) => {
      this.resolve = resolve;
      this.paceTimer = setTimeout(this.checkPace, this.pace.firstByteTimeoutMs);
      const { gunzip, source } = this;
      if (gunzip !== undefined) {
        gunzip.on('data', this.onInflated);
        gunzip.on('end', this.onInflatedEnd);
        gunzip.on('error', this.onGzipError);
      }
      source.on('data', this.onData);
      source.on('end', this.onEnd);
      source.on('close', this.onClose);
      source.on('error', this.onClose);
    });
  }

  private settle(result: BodyResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.paceTimer);
    const { gunzip, source } = this;
    source.off('data', this.onData);
    source.off('end', this.onEnd);
    source.off('close', this.onClose);
    source.off('error', this.onClose);
    if (gunzip !== undefined) {
      gunzip.off('data', this.onInflated);
      gunzip.off('end', this.onInflatedEnd);
      // NOTE: an error listener stays, since destroy() may still emit one.
      gunzip.destroy();
    }
    this.chunks.length = 0;
    // Throw the rest of the body away (no 'data' listener left, flowing mode).
    if (!result.ok) source.resume();
    this.resolve(result);
  }

  private collect(chunk: Buffer): void {
    this.bodyBytes += chunk.length;
    if (this.bodyBytes > this.limitBytes) {
      this.settle(tooLarge(this.gunzip ? 'decompressed body is' : 'body is'));
      return;
    }
    // NOTE: against the compressed bytes received so far, so a bomb is cut as it inflates.
    if (this.gunzip !== undefined && this.bodyBytes > GZIP_RATIO_FREE_BYTES && this.bodyBytes > MAX_GZIP_RATIO * this.rawBytes) {
      this.settle({
        ok: false,
        status: 413,
        code: 'compression_ratio_too_high',
        message: `the gzip body inflates more than ${MAX_GZIP_RATIO} times its compressed size (${this.rawBytes} bytes to over ${this.bodyBytes}): send calls as they are, not padded or repeated`,
      });
      return;
    }
    this.chunks.push(chunk);
  }

  private readonly onData = (chunk: Buffer): void => {
    this.rawBytes += chunk.length;
    const { gunzip } = this;
    if (gunzip === undefined) {
      this.collect(chunk);
      return;
    }
    if (this.rawBytes > this.limitBytes) {
      this.settle(tooLarge('compressed body is'));
      return;
    }
    if (!gunzip.write(chunk)) {
      this.source.pause();
      gunzip.once('drain', () => {
        if (!this.settled) this.source.resume();
      });
    }
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    if (this.gunzip === undefined) this.settle({ ok: true, bytes: Buffer.concat(this.chunks, this.bodyBytes) });
    else this.gunzip.end();
  };

  // 'close' before 'end': the client disconnected or the request timed out. (After
  // 'end' it is the normal close, while gzip may still be inflating the tail.)
  private readonly onClose = (): void => {
    if (!this.ended) this.settle({ ok: false, aborted: true });
  };

  /**
   * The body's pace, checked when it could first fall behind and again at each new
   * deadline. NOTE: timers run before the loop's I/O poll, so after a stall (a burst of
   * work, a GC pause) bytes already in the socket would not be counted yet: the check
   * waits one loop turn (setImmediate runs after the poll), as http-sender.ts's deadline does.
   */
  private readonly checkPace = (): void => {
    if (!this.settled && !this.ended) setImmediate(this.judgePace);
  };

  private readonly judgePace = (): void => {
    if (this.settled || this.ended) return;
    const deadline = bodyDeadlineMs(this.startedMs, this.rawBytes, this.pace);
    const now = Date.now();
    if (now < deadline) {
      this.paceTimer = setTimeout(this.checkPace, deadline - now);
      return;
    }
    const message =
      this.rawBytes === 0
        ? `no byte of the body arrived within ${this.pace.firstByteTimeoutMs / 1000} s of the headers: send the body right after the headers`
        : `the body arrived slower than ${this.pace.minBytesPerSecond} bytes a second: send it without pauses`;
    this.settle({ ok: false, status: 408, code: 'request_timeout', message });
  };

  private readonly onInflated = (chunk: Buffer): void => this.collect(chunk);

  private readonly onInflatedEnd = (): void => this.settle({ ok: true, bytes: Buffer.concat(this.chunks, this.bodyBytes) });

  private readonly onGzipError = (error: Error): void => {
    this.settle({
      ok: false,
      status: 400,
      code: 'invalid_gzip',
      message: `body is not valid gzip (${error.message}): compress the whole body with gzip, or leave out Content-Encoding`
    });
  };
}

export type JsonResult = { ok: true; value: unknown } | { ok: false; message: string };

/** Parses a body as UTF-8 JSON (a leading byte order mark ignored), with an actionable message when it is not. */
export function parseJsonBody(bytes: Buffer): JsonResult {
  if (bytes.length === 0) return { ok: false, message: 'body is empty: send the calls as a JSON object' };
  // NOTE: Buffer#toString would turn invalid UTF-8 into U+FFFD without a word.
  if (!isUtf8(bytes)) return { ok: false, message: 'body is not valid UTF-8: encode the JSON as UTF-8' };
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8', start)) };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `body is not valid JSON (${detail.slice(0, 200)}): send the calls as one JSON object` };
  }
}
