#!/usr/bin/env node
// The composition root: the only place that reads process.env and argv,
// loads the config once and wires the roles together.
import { parseArgs } from 'node:util';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../config/load.js';
import { secretsOf } from '../config/mask.js';
import { runCheckConfig } from '../config/check-config.js';
import { watchedConfigStore } from '../config/store.js';
import { createKafka } from '../kafka/client.js';
import { createLogger } from '../observability/logger.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { createAdminServer } from '../observability/admin-server.js';
import { tracingRequest } from '../observability/tracing.js';
import type { TracingSdk } from '../observability/tracing-sdk.js';
import { createDeletionRequester } from '../router/deletion-requests.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';
import { runServices } from '../runtime/run-services.js';
import { ROLE_FACTORIES, ROLE_NAMES, replayCommand } from './roles.js';
import type { RoleName } from './roles.js';

const USAGE = `usage:
  switchyard gateway|router|deliverer|all [--config PATH]
  switchyard check-config [--config PATH]
  switchyard replay --destination ID [--limit N] [--config PATH]

The config path is --config, else $SWITCHYARD_CONFIG, else config/switchyard.yaml.
$KAFKA_BROKERS (comma-separated host:port) overrides kafka.brokers.`;

export const EXIT_OK = 0;
export const EXIT_CONFIG = 1;
export const EXIT_RUNTIME = 2;

/** How long the process may linger after main() finished before it is ended anyway. */
const LINGER_AFTER_STOP_MS = 2_000;

export async function main(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        destination: { type: 'string' },
        limit: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    process.stderr.write(`switchyard: ${(error as Error).message}\n${USAGE}\n`);
    return EXIT_CONFIG;
  }
  const [command, ...rest] = parsed.positionals;
  if (parsed.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT_OK;
  }
  if (!command || rest.length > 0) {
    process.stderr.write(`switchyard: ${command ? `unexpected argument "${rest[0]}"` : 'no command given'}\n${USAGE}\n`);
    return EXIT_CONFIG;
  }
  const configFile = parsed.values.config ?? env.SWITCHYARD_CONFIG ?? 'config/switchyard.yaml';

  if (command === 'check-config') {
    return runCheckConfig(configFile, env, (line) => process.stdout.write(`${line}\n`));
  }
  if (command !== 'replay' && !(ROLE_NAMES as readonly string[]).includes(command)) {
    process.stderr.write(`switchyard: unknown command "${command}"\n${USAGE}\n`);
    return EXIT_CONFIG;
  }

  const loaded = loadConfigFile(configFile, env);
  if (!loaded.ok) {
    for (const error of loaded.errors) process.stderr.write(`${error}\n`);
    process.stderr.write(`switchyard: ${loaded.errors.length} problem(s) in the config; nothing started\n`);
    return EXIT_CONFIG;
  }
  const initial = loaded.config;
  let secrets = secretsOf(initial);
  const logger = createLogger({ level: env.LOG_LEVEL ?? initial.log.level, secrets: () => secrets });
  const config = watchedConfigStore({ file: configFile, initial, env, logger });
  config.onChange((next) => {
    secrets = secretsOf(next);
  });
  const kafka = createKafka(initial.kafka, logger);
  const metrics = createMetrics();
  const deps: RoleDeps = { config, kafka, metrics, logger };

  if (command === 'replay') {
    const destination = parsed.values.destination;
    const limit = parsed.values.limit === undefined ? undefined : Number(parsed.values.limit);
    if (!destination || (limit !== undefined && (!Number.isInteger(limit) || limit <= 0))) {
      process.stderr.write(`switchyard replay: --destination ID is required and --limit must be a positive integer\n${USAGE}\n`);
      config.close();
      return EXIT_CONFIG;
    }
    if (!initial.destinations.some((d) => d.id === destination)) {
      process.stderr.write(`switchyard replay: ${configFile}: destinations: no destination has id "${destination}"\n`);
      config.close();
      return EXIT_CONFIG;
    }
    try {
      const moved = await replayCommand(deps, { destinationId: destination, ...(limit ? { limit } : {}) });
      process.stdout.write(`replayed ${moved} dead letter(s) of "${destination}" back to delivery\n`);
      return EXIT_OK;
    } catch (error) {
      logger.error({ err: error }, 'replay failed');
      process.stderr.write(`switchyard replay: ${(error as Error).message}\n`);
      return EXIT_RUNTIME;
    } finally {
      config.close();
    }
  }

  const role = command as RoleName;
  const tracing = await startTracing(role, env, logger);
  const roles: Service[] = ROLE_FACTORIES[role](deps);
  const deletions = createDeletionRequester(kafka, () => config.current().kafka.topicPrefix);
  const admin = createAdminServer({
    host: initial.admin.host,
    port: initial.admin.port,
    token: () => config.current().admin.token,
    metrics,
    logger,
    health: () => roles.map((s) => ({ name: s.name, ...s.health() })),
    deletions: deletions.handle,
  });
  return runServices({
    services: [admin, ...roles],
    afterStop: async () => {
      await deletions.stop();
      config.close();
      // Last: the spans of the drain are exported too.
      await tracing?.shutdown();
    },
    shutdownTimeoutMs: initial.shutdownTimeoutMs,
    logger,
  });
}

/**
 * The OpenTelemetry SDK with an OTLP/HTTP exporter, when the standard OTEL_* variables
 * ask for it; loaded only then. Without it every hop passes `traceparent` on unchanged.
 * A tracing setup that fails is logged and the daemon runs without it.
 */
async function startTracing(role: string, env: Record<string, string | undefined>, logger: Logger): Promise<TracingSdk | undefined> {
  const request = tracingRequest(env);
  if (request.mode === 'unsupported') logger.warn(`tracing off: ${request.why}`);
  if (request.mode !== 'on') return undefined;
  try {
    const { startOtlpTracing } = await import('../observability/tracing-sdk.js');
    const sdk = await startOtlpTracing({ role, logger });
    logger.info({ why: request.why }, 'tracing on: spans are exported over OTLP/HTTP');
    return sdk;
  } catch (error) {
    logger.error({ err: error }, 'could not start tracing; running without it (traceparent headers are still passed on)');
    return undefined;
  }
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2), process.env).then(
    (code) => {
      process.exitCode = code;
      // NOTE: everything is stopped and closed by now, so the process ends by itself. If
      // a library still held the event loop (a socket, a timer), it would wait for the
      // orchestrator's SIGKILL; this unref'd timer ends it instead, with the same code.
      setTimeout(() => process.exit(code), LINGER_AFTER_STOP_MS).unref();
    },
    (error: unknown) => {
      process.stderr.write(`switchyard: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(EXIT_RUNTIME);
    },
  );
}
