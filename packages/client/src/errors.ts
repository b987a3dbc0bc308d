/**
 * The client's errors. Each has a stable `code` (what went wrong, for programs),
 * `retriable` (whether sending the same thing again later can help) and, where there
 * is one, `cause`. Messages say what was wrong and what to do.
 */

export type ValidationCode =
  | 'missing_identity'
  | 'missing_event'
  | 'missing_user_id'
  | 'missing_previous_id'
  | 'missing_group_id'
  | 'bad_field'
  | 'bad_timestamp'
  | 'too_large';

/**
 * `rejected`: the endpoint refused the batch (HTTP 4xx other than 408/429, or a Kafka
 * error no retry fixes). `invalid`: the gateway accepted the batch but kept these calls
 * aside in calls.invalid. `retries_exhausted`: no attempt was accepted.
 */
export type DeliveryCode = 'rejected' | 'invalid' | 'retries_exhausted';

export class AnalyticsError extends Error {
  readonly code: string;
  readonly retriable: boolean;

  constructor(code: string, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** A call that cannot be sent as given; thrown by identify/track/… before anything is queued. */
export class AnalyticsValidationError extends AnalyticsError {
  declare readonly code: ValidationCode;

  constructor(code: ValidationCode, message: string) {
    super(code, message);
  }
}

/** An option of `new Analytics(...)` that cannot work. */
export class AnalyticsConfigError extends AnalyticsError {
  declare readonly code: 'bad_option';

  constructor(message: string) {
    super('bad_option', message);
  }
}

/** A call made after `close()`. */
export class AnalyticsClosedError extends AnalyticsError {
  declare readonly code: 'closed';

  constructor(method: string) {
    super('closed', `analytics.${method}() called after close(): create a new Analytics client to send more calls`);
  }
}

/** The in-memory queue is full because the endpoint has not accepted calls fast enough. */
export class AnalyticsQueueFullError extends AnalyticsError {
  declare readonly code: 'queue_full';

  constructor(limit: number) {
    super(
      'queue_full',
      `${limit} calls are already waiting to be sent (the endpoint is down or slower than the calls come in): ` +
        'check the endpoint, call flush() and await it, or raise maxQueuedCalls',
      { retriable: true },
    );
  }
}

/**
 * Calls that were not accepted (see DeliveryCode). `calls` holds them as they were
 * queued, so an application can keep them elsewhere.
 */
export class AnalyticsDeliveryError extends AnalyticsError {
  declare readonly code: DeliveryCode;
  /** The HTTP status of the last answer, when there was one. */
  readonly status: number | undefined;
  /** How many times the batch was sent. */
  readonly attempts: number;
  /** The calls not accepted, as queued (JSON objects). */
  readonly calls: readonly Record<string, unknown>[];

  constructor(
    code: DeliveryCode,
    message: string,
    details: { status?: number; attempts: number; calls: readonly Record<string, unknown>[]; cause?: unknown },
  ) {
    super(code, message, { retriable: code === 'retries_exhausted', cause: details.cause });
    this.status = details.status;
    this.attempts = details.attempts;
    this.calls = details.calls;
  }
}
