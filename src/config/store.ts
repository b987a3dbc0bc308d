import { watchFile, unwatchFile } from 'node:fs';
import type { Logger } from 'pino';
import { loadConfigFile } from './load.js';
import type { Config } from './schema.js';

export type ConfigListener = (next: Config, previous: Config) => void;

/** The live config: the roles read `current()` and subscribe to changes. */
export interface ConfigStore {
  current(): Config;
  onChange(listener: ConfigListener): () => void;
  close(): void;
}

/** A store that never changes: tests, one-shot commands. */
export function staticConfigStore(config: Config): ConfigStore {
  return { current: () => config, onChange: () => () => undefined, close: () => undefined };
}

/**
 * Reloads the file when it changes. Polls (stat every `intervalMs`) rather than
 * using fs.watch: a Kubernetes ConfigMap update swaps a symlink, which inotify
 * watches on the file itself miss. A bad new file is refused and logged; the
 * old config stays.
 */
export function watchedConfigStore(options: {
  file: string;
  initial: Config;
  /** The other files the initial config was read from (tracking plans' `file`): a change to one reloads the config too. */
  files?: readonly string[];
  env: Record<string, string | undefined>;
  logger: Logger;
  intervalMs?: number;
  /** Told of each reload of a changed file: applied, or refused (kept the old config). */
  onReload?: (result: 'applied' | 'refused') => void;
}): ConfigStore {
  let config = options.initial;
  const listeners = new Set<ConfigListener>();
  /** Versions of the file refused since the last good one: the log says when the file is good again. */
  let refused = 0;
  const intervalMs = options.intervalMs ?? 1_000;
  const extras = watchedFiles(intervalMs, () => onStat(), options.file);
  const reload = () => {
    const result = loadConfigFile(options.file, options.env);
    // NOTE: a refused file keeps the plan files known watched: fixing one of them reloads.
    if (result.ok) extras.set(result.files);
    if (!result.ok) {
      refused += 1;
      options.logger.error(
        { file: options.file, errors: result.errors },
        `config reload refused: ${result.errors.length} problem(s) in ${options.file}; keeping the running config. Fix the file and save it again.`,
      );
      options.onReload?.('refused');
      return;
    }
    const unchanged = JSON.stringify(result.config) === JSON.stringify(config);
    if (refused > 0) {
      // NOTE: a fix that goes back to the running config changes nothing and counts neither
      // applied nor refused (docs/metrics.md), so this line is what says the problem is over.
      options.logger.info(
        { file: options.file, refusedBefore: refused },
        `config file valid again after ${refused} refused version(s); ${unchanged ? 'it matches the running config: nothing to apply' : 'applying it'}`,
      );
      refused = 0;
    }
    if (unchanged) return;
    const previous = config;
    config = result.config;
    options.logger.info({ file: options.file }, 'config reloaded');
    options.onReload?.('applied');
    for (const listener of listeners) {
      try {
        listener(config, previous);
      } catch (error) {
        options.logger.error({ err: error }, 'config change listener failed');
      }
    }
  };
  let reported = false;
  const onStat = () => {
    reported = true;
    reload();
  };
  watchFile(options.file, { interval: intervalMs, persistent: false }, onStat);
  extras.set(options.files ?? []);
  // NOTE: watchFile takes its first stat in the background, and a change saved before
  // that stat is never reported: one look after the first poll, unless a change was
  // reported by then, catches a file changed between its load and the watch (an
  // unchanged file is no reload).
  const firstLook = setTimeout(() => {
    if (!reported) reload();
  }, intervalMs);
  firstLook.unref();
  return {
    current: () => config,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => {
      clearTimeout(firstLook);
      unwatchFile(options.file, onStat);
      extras.set([]);
    },
  };
}

/** The config's other files (tracking plans' `file`), polled like the config file: `set` replaces the list. */
function watchedFiles(intervalMs: number, onChange: () => void, configFile: string): { set(files: readonly string[]): void } {
  const watched = new Set<string>();
  return {
    set(files) {
      for (const file of watched) {
        if (files.includes(file)) continue;
        unwatchFile(file, onChange);
        watched.delete(file);
      }
      for (const file of files) {
        if (watched.has(file) || file === configFile) continue;
        watchFile(file, { interval: intervalMs, persistent: false }, onChange);
        watched.add(file);
      }
    },
  };
}
