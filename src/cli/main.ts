#!/usr/bin/env node
// The composition root: the only place that reads process.env and argv,
// loads the config once and wires the roles together.
import { realpathSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../config/load.js';
import { secretsOf } from '../config/mask.js';
import { configWarnings, runCheckConfig } from '../config/check-config.js';
import { staticConfigStore, watchedConfigStore } from '../config/store.js';
import type { Config } from '../config/schema.js';
import { createKafka, isKafkaClientError } from '../kafka/index.js';
import { createLogger } from '../observability/logger.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { createAdminServer } from '../admin/admin-server.js';
import type { AdminServer } from '../admin/admin-server.js';
import type { DeletionHandler } from '../admin/deletions.js';
import { tracingRequest } from '../observability/tracing.js';
import type { TracingSdk } from '../observability/tracing-sdk.js';
import { createDeletionRequester } from '../admin/deletion-requests.js';
import { createDestinationsStatus } from '../admin/destinations-status.js';
import { createDestinationActions } from '../lifecycle/destination-commands.js';
import type { DestinationActions } from '../lifecycle/destination-commands.js';
import { createStateFollower } from '../lifecycle/state-follower.js';
import { isDelivererStatus } from '../delivery/deliverer-service.js';
import { listDeadLetters } from '../delivery/dlq/list-dead-letters.js';
import { replayDeadLetters } from '../delivery/dlq/replay.js';
import { startRecentDeliveries } from '../observability/recent-deliveries.js';
import type { RecentDeliveries } from '../observability/recent-deliveries.js';
import { startMinuteHistory } from '../observability/minute-history.js';
import type { MinuteHistory } from '../observability/minute-history.js';
import { traceUser } from '../trace/trace.js';
import { recentViolations } from '../trace/recent-violations.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';
import { runServices } from '../runtime/run-services.js';
import { VERSION } from '../version.js';
import { parseCommandLine } from './args.js';
import type { Invocation } from './args.js';
import { runBlockedReplay, runDlqList, runReplay, runReplayOne, runTrace } from './operator-commands.js';
import { guardedOutput } from './output.js';
import { runDestinationsCommand } from './destination-commands.js';
import { ROLE_FACTORIES } from './roles.js';

export const EXIT_OK = 0;
export const EXIT_CONFIG = 1;
export const EXIT_RUNTIME = 2;

/** How long the process may linger after main() finished before it is ended anyway. */
const LINGER_AFTER_STOP_MS = 2_000;

const stdout = guardedOutput(process.stdout);
const stderr = guardedOutput(process.stderr);

export async function main(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const invocation = parseCommandLine(argv, Date.now());
  switch (invocation.kind) {
    case 'help':
      stdout.write(`${invocation.text}\n`);
      return EXIT_OK;
    case 'version':
      stdout.write(`switchyard ${VERSION}\n`);
      return EXIT_OK;
    case 'usage-error':
      stderr.write(`${invocation.message}\n`);
      return EXIT_CONFIG;
    default:
      break;
  }
  const configFile = invocation.config ?? env.SWITCHYARD_CONFIG ?? 'config/switchyard.yaml';

  if (invocation.kind === 'check-config') {
    return runCheckConfig(
      configFile,
      env,
      (line) => stdout.write(`${line}\n`),
      (line) => stderr.write(`${line}\n`),
    );
  }

  const operatorCommand = invocation.kind === 'replay' || invocation.kind === 'replay-blocked' || invocation.kind === 'dlq-list' || invocation.kind === 'trace' || invocation.kind === 'destinations';
  const loaded = loadConfigFile(configFile, env, { adminApi: !operatorCommand });
  if (!loaded.ok) {
    for (const error of loaded.errors) stderr.write(`${error}\n`);
    stderr.write(`switchyard: ${loaded.errors.length} problem(s) in the config; nothing started\n`);
    return EXIT_CONFIG;
  }
  const initial = loaded.config;

  if (operatorCommand) {
    return runOperatorCommand(invocation, configFile, initial, env);
  }

  let secrets = secretsOf(initial);
  const logger = createLogger({ level: env.LOG_LEVEL ?? initial.log.level, secrets: () => secrets });
  for (const warning of configWarnings(initial)) logger.warn(`${configFile}: ${warning}`);
  const metrics = createMetrics();
  const config = watchedConfigStore({
    file: configFile,
    initial,
    files: loaded.files,
    env,
    logger,
    onReload: (result) => metrics.configReloads.inc({ result }),
  });
  config.onChange((next) => {
    secrets = secretsOf(next);
  });
  const kafka = createKafka(initial.kafka, logger);
  const role = invocation.role;
  // Every role follows destinations.state: deliverers act on it, every admin port serves it (src/lifecycle/).
  const destinationStates = createStateFollower({ config, kafka, metrics, logger, required: role === 'deliverer' || role === 'all' });
  const deps: RoleDeps = { config, kafka, metrics, logger, destinationStates };

  const tracing = await startTracing(role, env, logger);
  const roles: Service[] = ROLE_FACTORIES[role](deps);
  const deletions = createDeletionRequester(kafka, () => config.current().kafka.topicPrefix);
  const destinationActions = createDestinationActions({ config, kafka, states: destinationStates });
  const { admin, recent, hour } = createAdmin(deps, roles, role, deletions, destinationActions);
  return runServices({
    services: [admin, destinationStates, ...roles],
    afterStop: async () => {
      await deletions.stop();
      await destinationActions.stop();
      recent?.stop();
      hour?.stop();
      config.close();
      // Last: the spans of the drain are exported too.
      await tracing?.shutdown();
    },
    shutdownTimeoutMs: initial.shutdownTimeoutMs,
    logger,
  });
}

/**
 * The admin port of a role: its probes, the admin API and the console, with what this
 * process knows (a deliverer's lanes and last minute, when it runs one).
 */
function createAdmin(
  deps: RoleDeps,
  roles: Service[],
  role: string,
  deletions: { handle: DeletionHandler },
  destinationActions: DestinationActions,
): { admin: AdminServer; recent: RecentDeliveries | undefined; hour: MinuteHistory | undefined } {
  const { config, kafka, metrics, logger } = deps;
  const initial = config.current();
  const deliverer = roles.find(isDelivererStatus);
  const recent = deliverer === undefined ? undefined : startRecentDeliveries(metrics);
  const hour = deliverer === undefined ? undefined : startMinuteHistory(metrics);
  const destinations = createDestinationsStatus({
    config,
    kafka,
    answeredBy: { pod: hostname(), role, version: VERSION, pid: process.pid, startedAt: new Date().toISOString() },
    recent,
    hour,
    deliverer,
    lifecycle: deps.destinationStates === undefined ? undefined : (id) => deps.destinationStates!.view.lifecycle(id),
    logger,
  });
  const admin = createAdminServer({
    host: initial.admin.host,
    port: initial.admin.port,
    token: () => config.current().admin.token,
    allowedHosts: () => config.current().admin.allowedHosts,
    metrics,
    logger,
    health: () => roles.map((s) => ({ name: s.name, ...s.health() })),
    deletions: deletions.handle,
    destinationActions,
    trace: (query) => traceUser(deps, query),
    violations: (query) => recentViolations(deps, query),
    destinations,
    letters: {
      destinations: () => config.current().destinations.map((d) => d.id),
      list: (options) => listDeadLetters(deps, options),
      replay: (options) => replayDeadLetters(deps, options),
    },
  });
  return { admin, recent, hour };
}

const OPERATOR_COMMAND_NAME = { replay: 'replay', 'replay-blocked': 'replay --blocked', 'dlq-list': 'dlq list', trace: 'trace', destinations: 'destinations' } as const;

/** Who a change made with the CLI names: the OS user and the host (docs/cli.md#destinations). */
function cliActor(): string {
  let user = 'unknown user';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container's numeric user): the host still says where
  }
  return `${user}@${hostname()} (cli)`;
}

/**
 * `dlq list`, `replay` and `trace`: one-shot, on the config as loaded (no reload), with
 * logs on stderr so that stdout carries only what they print.
 */
async function runOperatorCommand(
  invocation: Extract<Invocation, { kind: 'replay' | 'replay-blocked' | 'dlq-list' | 'trace' | 'destinations' }>,
  configFile: string,
  config: Config,
  env: Record<string, string | undefined>,
): Promise<number> {
  const name = invocation.kind === 'destinations' ? `destinations ${invocation.action}` : OPERATOR_COMMAND_NAME[invocation.kind];
  // `destinations enable|disable` names an unknown id in its own words (src/lifecycle/destination-commands.ts).
  const destination = invocation.kind === 'trace' || invocation.kind === 'replay-blocked' || invocation.kind === 'destinations' ? undefined : invocation.query.destination;
  if (destination !== undefined && !config.destinations.some((d) => d.id === destination)) {
    const known = config.destinations.map((d) => d.id).join(', ') || 'none';
    stderr.write(`switchyard ${name}: ${configFile}: destinations: no destination has id "${destination}" (the config has: ${known}); give one of those with --destination\n`);
    return EXIT_CONFIG;
  }
  if (invocation.kind === 'replay-blocked' && !config.sources.some((s) => s.id === invocation.source)) {
    const known = config.sources.map((s) => s.id).join(', ');
    stderr.write(`switchyard ${name}: ${configFile}: sources: no source has id "${invocation.source}" (the config has: ${known}); give one of those with --source\n`);
    return EXIT_CONFIG;
  }
  const secrets = secretsOf(config);
  const logger = createLogger({ level: env.LOG_LEVEL ?? 'warn', secrets: () => secrets, destination: process.stderr });
  const deps: RoleDeps = { config: staticConfigStore(config), kafka: createKafka(config.kafka, logger), metrics: createMetrics({ defaultMetrics: false }), logger };
  const io = { stdout, stderr };
  try {
    if (invocation.kind === 'trace') return await runTrace(deps, invocation.query, invocation.json, io);
    if (invocation.kind === 'destinations') return await runDestinationsCommand(deps, invocation, cliActor(), io);
    if (invocation.kind === 'replay-blocked') return await runBlockedReplay(deps, invocation, io);
    if (invocation.kind === 'replay' && invocation.messageId !== undefined) return await runReplayOne(deps, invocation.query, invocation.messageId, invocation.dryRun, io);
    return invocation.kind === 'replay'
      ? await runReplay(deps, invocation.query, invocation.dryRun, io)
      : await runDlqList(deps, invocation.query, invocation.json, io);
  } catch (error) {
    logger.debug({ err: error }, `${name} failed`);
    // The Kafka client's errors say what failed, not where: name the brokers the command used.
    const kafkaError = isKafkaClientError(error);
    const where = kafkaError ? ` (Kafka at ${config.kafka.brokers.join(',')}: check kafka.brokers or $KAFKA_BROKERS and that the broker is up, then run it again)` : '';
    stderr.write(`switchyard ${name}: ${(error as Error).message}${where}\n`);
    return EXIT_RUNTIME;
  }
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
      stderr.write(`switchyard: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(EXIT_RUNTIME);
    },
  );
}
