import type { Logger } from 'pino';
import type { Service } from './service.js';
import { runAll } from './service.js';

/**
 * Sends Node's process warnings through `logger` instead of Node's plain-text line on
 * stderr, so the process writes nothing but pino JSON. Returns a function that puts
 * Node's own handling back (for tests).
 *
 * NOTE: Node prints warnings from a 'warning' listener of its own, so removing the
 * listeners is what silences that line. The one seen in practice (chaos runs, in the
 * deliverer, amid the ECONNREFUSED retries of the Kafka client of the time, kafkajs,
 * while the broker was down): MaxListenersExceededWarning, "11 connect listeners added
 * to [Socket]". Any library may warn so; the listener stays for all of them.
 */
export function logProcessWarnings(logger: Logger): () => void {
  const previous = process.listeners('warning');
  process.removeAllListeners('warning');
  const onWarning = (warning: Error & { code?: string }) => {
    logger.warn({ warning: { name: warning.name, code: warning.code, message: warning.message } }, `node warning: ${warning.name}: ${warning.message}`);
  };
  process.on('warning', onWarning);
  return () => {
    process.off('warning', onWarning);
    for (const listener of previous) process.on('warning', listener);
  };
}

/**
 * Starts the services in order and runs until SIGTERM/SIGINT. Then stops them
 * in reverse order (intake first: the admin server, listed first, stops last
 * so /metrics and probes answer during the drain). A second signal or the
 * shutdown timeout forces exit code 2. Resolves with the process exit code.
 */
export async function runServices(options: {
  services: Service[];
  afterStop?: () => Promise<void>;
  shutdownTimeoutMs: number;
  logger: Logger;
}): Promise<number> {
  const { services, logger } = options;
  let stopping: Promise<number> | undefined;
  let resolveStopped: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => {
    resolveStopped = resolve;
  });

  const stop = (reason: string): Promise<number> => {
    stopping ??= (async () => {
      logger.info({ reason }, 'shutting down');
      const timer = setTimeout(() => {
        logger.error({ timeoutMs: options.shutdownTimeoutMs }, 'shutdown timed out; exiting with work possibly uncommitted (it will be redelivered)');
        process.exit(2);
      }, options.shutdownTimeoutMs);
      timer.unref();
      try {
        // afterStop runs even when a service failed to stop: it closes what keeps
        // the process alive and flushes the spans.
        await runAll([...[...services].reverse().map((service) => () => service.stop()), async () => options.afterStop?.()]);
        logger.info('stopped cleanly');
        return 0;
      } catch (error) {
        logger.error({ err: error }, 'shutdown failed');
        return 2;
      } finally {
        clearTimeout(timer);
      }
    })();
    void stopping.then(resolveStopped);
    return stopping;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(2);
    }
    void stop(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  logProcessWarnings(logger);
  process.on('unhandledRejection', (error) => {
    logger.fatal({ err: error }, 'unhandled promise rejection; exiting so the orchestrator restarts the process');
    process.exit(2);
  });
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception; exiting so the orchestrator restarts the process');
    process.exit(2);
  });

  for (const service of services) {
    try {
      await service.start();
    } catch (error) {
      logger.fatal({ err: error, component: service.name }, `could not start ${service.name}`);
      await stop('start failure');
      return 2;
    }
  }
  logger.info({ services: services.map((s) => s.name) }, 'started');
  return stopped;
}
