// kafkajs's one warning on Node 24: TimeoutNegativeWarning, dropped where kafkajs raises it.

const INSTALLED = Symbol.for('switchyard.kafkajsNegativeTimeoutFilter');
const WARNING_TYPE = 'TimeoutNegativeWarning';
/** A stack frame in kafkajs's own files (POSIX or Windows paths). */
const KAFKAJS_FRAME = /[\\/]node_modules[\\/]kafkajs[\\/]/;

type EmitWarning = (warning: string | Error, ...rest: unknown[]) => void;

/** The type a process.emitWarning call names: (warning, type?), (warning, { type }) or an Error's name. */
export function warningType(warning: string | Error, typeOrOptions: unknown): string {
  if (typeof typeOrOptions === 'string') return typeOrOptions;
  if (typeof typeOrOptions === 'object' && typeOrOptions !== null && 'type' in typeOrOptions && typeof typeOrOptions.type === 'string') {
    return typeOrOptions.type;
  }
  return typeof warning === 'string' ? 'Warning' : warning.name;
}

/** True for a TimeoutNegativeWarning whose call stack runs through kafkajs. */
export function isKafkajsNegativeTimeout(type: string, stack: string): boolean {
  return type === WARNING_TYPE && KAFKAJS_FRAME.test(stack);
}

/**
 * Keeps kafkajs's TimeoutNegativeWarning off stderr; every other warning, and this one
 * raised by any other code, is printed as before. Safe to call more than once.
 *
 * NOTE: kafkajs 2.2.4's request queue (src/network/requestQueue/index.js,
 * scheduleCheckPendingRequests) arms its throttle timer at `throttledUntil - Date.now()`
 * also when nothing is throttled, and `throttledUntil` starts at -1: a delay of about
 * -1.8e12 ms. Node has always run such a timer after 1 ms; since Node 23 it also warns, on
 * the first negative delay of a process (tulios/kafkajs#1751; kafkajs takes no fixes). So
 * every process that talks to Kafka through kafkajs printed it once on stderr. Node's
 * --disable-warning would drop the type for all code and must be on each command line;
 * this checks the stack instead (a capture only when a warning is raised, which is rare).
 */
export function ignoreKafkajsNegativeTimeoutWarning(): void {
  const holder = process as unknown as Record<symbol, boolean | undefined> & { emitWarning: EmitWarning };
  if (holder[INSTALLED]) return;
  holder[INSTALLED] = true;
  const emitWarning = holder.emitWarning;
  holder.emitWarning = function filteredEmitWarning(warning: string | Error, ...rest: unknown[]): void {
    const type = warningType(warning, rest[0]);
    if (type === WARNING_TYPE && isKafkajsNegativeTimeout(type, new Error().stack ?? '')) return;
    emitWarning.call(process, warning, ...rest);
  };
}
