// A process that runs src/runtime/run-services.ts with stand-in services, so its
// signal, timeout and crash handling can be tested in a real process without Kafka.
//   node --import tsx test/support/run-services-fixture.ts <scenario> [shutdownTimeoutMs]
import { createLogger } from '../../src/observability/logger.js';
import { runServices } from '../../src/runtime/run-services.js';
import type { Service } from '../../src/runtime/service.js';
import { onceStop } from '../../src/runtime/service.js';

type Scenario = 'clean' | 'slow-stop' | 'unhandled-rejection' | 'uncaught-exception' | 'start-failure';

const scenario = process.argv[2] as Scenario;
const shutdownTimeoutMs = Number(process.argv[3] ?? 5_000);
const logger = createLogger({ level: 'info' });

function service(name: string, options: { startFails?: boolean; stopMs?: number } = {}): Service {
  return {
    name,
    async start() {
      if (options.startFails) throw new Error(`${name} could not reach its broker`);
      logger.info({ fixture: name }, 'fixture service started');
    },
    stop: onceStop(async () => {
      logger.info({ fixture: name }, 'fixture service stopping');
      if (options.stopMs) await new Promise((resolve) => setTimeout(resolve, options.stopMs));
      logger.info({ fixture: name }, 'fixture service stopped');
    }),
    health: () => ({ live: true, ready: true }),
  };
}

const services: Service[] =
  scenario === 'start-failure'
    ? [service('first'), service('second', { startFails: true }), service('third')]
    : [service('first'), service('second', { stopMs: scenario === 'slow-stop' ? 60_000 : 0 })];

// Keeps the process alive like a server would, until it is stopped.
const alive = setInterval(() => undefined, 1_000);
const code = runServices({ services, shutdownTimeoutMs, logger, afterStop: async () => clearInterval(alive) });
if (scenario === 'unhandled-rejection') {
  setTimeout(() => void Promise.reject(new Error('a promise nobody awaited failed')), 50);
}
if (scenario === 'uncaught-exception') {
  setTimeout(() => {
    throw new Error('a callback threw');
  }, 50);
}
code.then(
  (exitCode) => {
    logger.info({ exitCode }, 'fixture finished');
    process.exitCode = exitCode;
  },
  (error: unknown) => {
    logger.error({ err: error }, 'runServices rejected');
    process.exitCode = 99;
  },
);
