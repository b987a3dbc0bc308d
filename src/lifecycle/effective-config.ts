// The config a deliverer runs on: the file's, with each destination disabled in
// `destinations.state` turned `enabled: false`. The deliverer then stops and starts its
// lanes exactly as for a config reload (docs/webhooks.md#automatic-disabling): a stopped
// lane's events wait in its topics, untouched, and delivery resumes from its commits.
// The router keeps the file's config: events of a disabled destination are still routed
// into its topic, where they wait.
import { retryPolicyOf } from '../config/retry-policy.js';
import type { Config, DestinationConfig } from '../config/schema.js';
import type { ConfigListener, ConfigStore } from '../config/store.js';
import { retryWindowExtension } from './lifecycle-state.js';
import type { DestinationLifecycle } from './lifecycle-state.js';

/**
 * `config` with the lifecycle applied: a disabled destination is `enabled: false`; one
 * enabled again has its retry window longer by the time it spent disabled, for one window
 * (lifecycle-state.ts retryWindowExtension). Returns `config` itself when nothing changes.
 * Also when the next change by time alone is due (an extension ending), or undefined.
 */
export function effectiveConfig(config: Config, lifecycleOf: (id: string) => DestinationLifecycle, nowMs: number): { config: Config; nextChangeAtMs: number | undefined } {
  let changed = false;
  let nextChangeAtMs: number | undefined;
  const destinations = config.destinations.map((destination): DestinationConfig => {
    const lifecycle = lifecycleOf(destination.id);
    if (!destination.enabled) return destination;
    if (lifecycle.state === 'disabled') {
      changed = true;
      return { ...destination, enabled: false };
    }
    const policy = retryPolicyOf(config, destination);
    const extension = retryWindowExtension(lifecycle, policy.maxRetryWindowMs, nowMs);
    if (extension === undefined) return destination;
    changed = true;
    nextChangeAtMs = Math.min(nextChangeAtMs ?? Infinity, extension.untilMs);
    const retry = { ...destination.settings.retry, maxWindowMs: policy.maxRetryWindowMs + extension.extraMs };
    return { ...destination, settings: { ...destination.settings, retry } };
  });
  return { config: changed ? { ...config, destinations } : config, nextChangeAtMs };
}

/** `config` with every destination held back (`enabled: false`): what a deliverer runs on until the states are read. */
export function heldConfig(config: Config): Config {
  return { ...config, destinations: config.destinations.map((d) => (d.enabled ? { ...d, enabled: false } : d)) };
}

/**
 * A ConfigStore over `file` and the lifecycle: `current()` is the effective config, and its
 * listeners hear of both kinds of change. `refresh()` is called when the lifecycle changed.
 * NOTE: until `release()` (once `destinations.state` was read) every destination is held
 * back, so that a deliverer never starts the lane of a destination disabled there.
 */
export function createEffectiveConfigStore(file: ConfigStore, lifecycleOf: (id: string) => DestinationLifecycle, now: () => number = Date.now): ConfigStore & { refresh(): void; release(): void } {
  const listeners = new Set<ConfigListener>();
  let timer: NodeJS.Timeout | undefined;
  let held = true;
  let current: Config;
  const compute = (): Config => {
    if (held) return heldConfig(file.current());
    const { config, nextChangeAtMs } = effectiveConfig(file.current(), lifecycleOf, now());
    clearTimeout(timer);
    timer = nextChangeAtMs === undefined ? undefined : setTimeout(() => refresh(), Math.max(0, nextChangeAtMs - now()) + 1);
    timer?.unref();
    return config;
  };
  function refresh(fileChanged = false): void {
    const previous = current;
    const next = compute();
    if (!fileChanged && JSON.stringify(next.destinations) === JSON.stringify(previous.destinations)) return;
    current = next;
    for (const listener of listeners) listener(next, previous);
  }
  current = compute();
  const unsubscribe = file.onChange(() => refresh(true));
  return {
    current: () => current,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      clearTimeout(timer);
      unsubscribe();
      listeners.clear();
    },
    refresh: () => refresh(),
    release() {
      held = false;
      refresh();
    },
  };
}
