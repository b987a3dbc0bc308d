// What a failed Kafka request says: the broker's error names, whether the member's
// generation is over, whether another try may succeed.

/** Answers that mean the member's generation is over: its commit can never succeed; it rejoins and reads from the last commit. */
const GENERATION_LOST = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

/** An error and those it wraps, a few levels deep: its `cause` chain and an aggregate's `errors` (@platformatic/kafka's retries). */
export function errorChain(error: unknown): object[] {
  const found: object[] = [];
  const walk = (e: unknown, depth: number): void => {
    if (typeof e !== 'object' || e === null || depth > 5 || found.length > 50) return;
    found.push(e);
    walk((e as { cause?: unknown }).cause, depth + 1);
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner)) for (const item of inner) walk(item, depth + 1);
  };
  walk(error, 0);
  return found;
}

/** The broker error names in `error`: wire.ts's `type`, @platformatic/kafka's `apiId`. */
export function errorTypes(error: unknown): string[] {
  const types: string[] = [];
  for (const e of errorChain(error)) {
    const { type, apiId } = e as { type?: unknown; apiId?: unknown };
    if (typeof type === 'string') types.push(type);
    if (typeof apiId === 'string') types.push(apiId);
  }
  return types;
}

export function isGenerationLost(error: unknown): boolean {
  return errorTypes(error).some((type) => GENERATION_LOST.has(type));
}

/**
 * Whether another try may succeed: errors marked `retriable` (the runtimes') or
 * `canRetry` (wire.ts's, @platformatic/kafka's), on the error, a cause or an aggregated
 * error, and the client's timeouts and network errors. Anything else is not.
 */
export function isRetriable(error: unknown): boolean {
  return errorChain(error).some((e) => {
    const { retriable, canRetry, code } = e as { retriable?: unknown; canRetry?: unknown; code?: unknown };
    return retriable === true || canRetry === true || code === 'PLT_KFK_TIMEOUT' || code === 'PLT_KFK_NETWORK';
  });
}
