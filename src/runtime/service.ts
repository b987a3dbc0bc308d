/** What every role (gateway, router, deliverer, admin server) implements. */
export interface Service {
  readonly name: string;
  start(): Promise<void>;
  /** Idempotent: a second call returns the same promise. */
  stop(): Promise<void>;
  health(): ServiceHealth;
}

export interface ServiceHealth {
  /** The process should keep running (false → /healthz fails, the pod restarts). */
  live: boolean;
  /** Connected and consumers joined (false → /readyz fails, no traffic). */
  ready: boolean;
  detail?: string;
}

/**
 * Wraps a stop routine so that concurrent and repeated calls share one promise.
 */
export function onceStop(run: () => Promise<void>): () => Promise<void> {
  let promise: Promise<void> | undefined;
  return () => {
    promise ??= run();
    return promise;
  };
}

/**
 * Runs every cleanup step even when an earlier one failed, then throws the
 * first failure (if any) with the others attached as its cause.
 */
export async function runAll(steps: readonly (() => Promise<unknown>)[]): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} shutdown steps failed`);
}
