/**
 * What the queue needs from a way of sending calls. A send never throws for the
 * ordinary outcomes of talking to a server; it says what happened as a value.
 */

/** One queued call, serialized once at call time. */
export interface QueuedCall {
  /** The call as JSON text: what is sent, byte for byte. */
  readonly json: string;
  /** UTF-8 length of `json`. */
  readonly bytes: number;
  /** userId, else anonymousId: the Kafka key. */
  readonly key: string;
  readonly type: string;
  readonly messageId: string;
  /** The call as an object, for error reports. */
  readonly message: Record<string, unknown>;
}

/** A call the server refused on its own while accepting the rest of the batch. */
export interface RefusedCall {
  /** Position in the batch sent. */
  readonly index: number;
  readonly code: string;
  readonly message: string;
}

export type SendResult =
  /** The batch was accepted; `refused` lists calls the server kept aside as invalid. */
  | { readonly kind: 'success'; readonly refused?: readonly RefusedCall[] }
  /** Sending again later may work (5xx, 429, network error, broker unavailable). */
  | { readonly kind: 'retryable'; readonly reason: string; readonly status?: number; readonly retryAfterMs?: number; readonly cause?: unknown }
  /** Sending again will not help (4xx other than 408/429, a record the broker refuses). */
  | { readonly kind: 'failure'; readonly reason: string; readonly status?: number; readonly cause?: unknown };

/** How big one batch may be, in the transport's own terms. */
export interface BatchLimits {
  /** Most bytes of one call's JSON. */
  readonly maxCallBytes: number;
  /** Why maxCallBytes is what it is, when it is not simply 32 KB (for the error message). */
  readonly maxCallBytesWhy?: string;
  /** Most calls in one batch. */
  readonly maxCalls: number;
  /** Most bytes one batch may take on the wire, framing included. */
  readonly maxBytes: number;
  /** Bytes a batch takes before its first call (framing). */
  readonly overheadBytes: number;
  /** Bytes one call adds to a batch (its JSON plus separators, keys, headers). */
  callBytes(call: QueuedCall): number;
}

export interface Transport {
  /** Where calls go, for log lines: never carries credentials. */
  readonly description: string;
  readonly limits: BatchLimits;
  send(batch: readonly QueuedCall[]): Promise<SendResult>;
  /** Releases connections; called once by close(), after the last send. */
  close(): Promise<void>;
}
