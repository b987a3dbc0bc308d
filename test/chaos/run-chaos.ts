// One chaos run: a dedicated broker, the three roles as separate processes, hostile
// receivers, a load of calls and fuzzed inputs, faults at random instants; then the
// drain and the verdict: nothing acknowledged is lost, nothing arrives where it must
// not, no process dies unasked.
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdmin, createKafka } from '../../src/kafka/index.js';
import type { KafkaAdmin } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { buildIfStale } from '../support/cli-command.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { ROLES, RoleProcess, freePort, startDedicatedBroker, writeRoleConfig } from './cluster.js';
import type { DedicatedBroker, LogCounts, RoleName, UnexpectedExit } from './cluster.js';
import { planFaults, runFaults } from './faults.js';
import type { FaultRecord } from './faults.js';
import { emptyDeletionStats, feedDeletions } from './deletions.js';
import type { DeletionStats } from './deletions.js';
import { emptyFuzzStats, feedGateway, feedKafka } from './fuzz-feed.js';
import type { FuzzStats } from './fuzz-feed.js';
import { fuzzCalls, fuzzRequests } from './fuzz-inputs.js';
import { Ledger } from './ledger.js';
import { createKafkaWriter, emptyLoadStats, makeLoadCall, pickSource, sendLoadCalls } from './load.js';
import type { KafkaWriter, LoadStats } from './load.js';
import type { ChaosProfile } from './profiles.js';
import { createRandom, freshSeed } from './random.js';
import { startChaosReceiver } from './receivers.js';
import type { ChaosReceiver, Failure } from './receivers.js';
import { sampleRole, trendOf } from './samples.js';
import type { ResourceSample, Trend } from './samples.js';
import { startTap } from './tap.js';
import { findTrails } from './trail.js';
import type { TrailStop } from './trail.js';
import type { KafkaTap } from './tap.js';
import { chaosConfig, chaosTopology } from './topology.js';
import type { ClusterSettings } from './topology.js';
import type { Topology } from './topology.js';
import { checkUserOrder } from './user-order.js';
import type { UserOrderResult } from './user-order.js';
import { duplicateCauses, duplicateMechanisms } from './duplicate-causes.js';
import type { DuplicateCause } from './duplicate-causes.js';
import { judge } from './verdict.js';
import type { Arrivals, Kept, Observations, Verdict } from './verdict.js';
import { topicNames } from '../../src/runtime/topics.js';
import { delivererGroupId } from '../../src/runtime/group-ids.js';
import { commitsAtKill, killExposure } from './kill-exposure.js';
import type { AnsweredEvent, CommitsAtKill, KillExposure } from './kill-exposure.js';

export interface RoleSummary {
  role: RoleName;
  kills: number;
  shutdown: string;
  logs: LogCounts;
  /** The most frequent error and fatal log messages. */
  topErrors: [string, number][];
  resources?: Trend;
}

export interface ChaosReport {
  profile: ChaosProfile & { seed: number };
  runTag: string;
  logDir: string;
  passed: boolean;
  /** Why it did not pass (empty when it did). */
  failures: string[];
  verdict: Verdict;
  loadStats: LoadStats;
  fuzzStats: Omit<FuzzStats, 'gatewayStatus'> & { gatewayStatus: Record<string, number> };
  faults: { kills: number; brokerRestarts: number; receiverOutages: number; reloads: number; failed: string[] };
  crashes: UnexpectedExit[];
  roles: RoleSummary[];
  receivers: { name: string; requests: number; failuresServed: Record<string, number>; problems: string[]; problemCount: number }[];
  /** Fuzzed bodies too large to keep for the body comparison (they are still accounted for). */
  fuzzBodiesNotChecked: number;
  /** Per destination, the reasons its dead letters give (URLs left out), most frequent first. */
  deadLetterReasons: Record<string, [string, number][]>;
  timings: {
    loadMs: number;
    /** From the end of the last fault (or of the load, if later) to everything accounted for and every consumer caught up. */
    drainMs: number | undefined;
    drainAfterLastFaultMs: number | undefined;
    totalMs: number;
  };
  duplicateRate: number;
  /**
   * Per destination: 2xx deliveries past the first (load, fuzz and deletions together),
   * and those per fault that can redeliver (SIGKILLs of any role and broker restarts).
   */
  duplicatesByDestination: Record<string, { duplicates: number; perFault: number }>;
  /** Duplicates by the fault that started last before them (duplicate-causes.ts). */
  duplicateCauses: Record<string, DuplicateCause>;
  /** For lost calls: every record of them found in the topics, in topic order (calls, deliveries, retries, dead letters). */
  trails: Record<string, TrailStop[]>;
  /**
   * A sample of duplicated events (load calls), each with every record of it in the calls
   * topic and its destination's topics, and the instants of its 2xx answers (ms after the
   * first): two records in `deliveries.<id>` are a copy the router wrote again, one record
   * answered twice is the deliverer sending it again.
   */
  duplicateTrails: { key: string; destination: string; answeredAtMs: number[]; stops: TrailStop[] }[];
  /** Every followed duplicate by how it came about (duplicate-causes.ts `duplicateMechanisms`). */
  duplicateMechanisms: Record<string, number>;
  /**
   * The deliverer's SIGKILLs and what each can make its successor send again: the events
   * of requests the receivers held open, and the events (load calls, per URL) answered 2xx
   * before the kill whose record the deliverer group had not committed then (its commits
   * read once the process was gone, before the successor started; kill-exposure.ts).
   * Duplicates of a deliverer's kill stay within their sum. `commitsRead` false: the
   * commits could not be read (`commitsNote` says why) and the kill counts nothing
   * answered. `redelivered*`: events answered again for the same record after the kill,
   * by whether it was committed at the kill (committed: nothing should send it again).
   */
  delivererKills: ({ atMs: number; openEvents: number; commitsRead: boolean; commitsReadAfterMs: number; commitsNote?: string } & KillExposure)[];
  /** Per destination with `ordering: user`: its receiver's first deliveries checked against the order of its topic (user-order.ts). */
  userOrder: Record<string, UserOrderResult>;
  /**
   * Per enabled destination: the records its topic got (events routed to it), the records
   * written to its retry tiers, and their ratio. NOTE: a record per failed attempt; an
   * open circuit writes none (docs/webhooks.md#circuit-breaker).
   */
  retryTierRecords: Record<string, { events: number; tierRecords: number; perEvent: number }>;
}

type Log = (line: string) => void;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Keeps a budget of concurrent sends and a steady rate: `dispatch` is called with the index of the next item and returns how many it took. */
async function pace(options: {
  total: number;
  perSecond: number;
  maxInFlight: number;
  dispatch: (next: number, due: number) => { taken: number; done: Promise<void> };
}): Promise<void> {
  const started = Date.now();
  const inFlight = new Set<Promise<void>>();
  let issued = 0;
  while (issued < options.total) {
    const due = Math.min(options.total, Math.floor(((Date.now() - started) / 1000) * options.perSecond)) - issued;
    if (due <= 0 || inFlight.size >= options.maxInFlight) {
      await (inFlight.size >= options.maxInFlight ? Promise.race(inFlight) : sleep(20));
      continue;
    }
    const { taken, done } = options.dispatch(issued, due);
    issued += taken;
    const tracked = done.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  await Promise.all(inFlight);
}

/** The consumer groups and topics that must reach zero lag for the run to be drained. */
function lagGroups(topology: Topology, prefix: string, tiers: readonly string[]): { groupId: string; topics: string[] }[] {
  const names = topicNames(prefix);
  const enabled = topology.destinations.filter((d) => d.enabled);
  return [
    { groupId: `${prefix}router`, topics: [names.calls, names.deletions] },
    // One group for every destination (src/delivery/deliverer-service.ts).
    { groupId: `${prefix}deliverer`, topics: enabled.flatMap((d) => [names.deliveries(d.id), ...tiers.map((tier) => names.retry(d.id, tier))]) },
  ];
}

/** Records not yet committed, in all and per group and topic (only those behind). */
async function consumerLag(admin: KafkaAdmin, groups: readonly { groupId: string; topics: string[] }[]): Promise<{ total: number; behind: string[] }> {
  let total = 0;
  const behind: string[] = [];
  for (const group of groups) {
    const committed = await admin.committedOffsets(group.groupId, group.topics);
    for (const topic of group.topics) {
      const ends = await admin.partitionEnds(topic);
      const partitions = committed.find((c) => c.topic === topic)?.partitions ?? [];
      const lag = topicLag(ends, partitions);
      total += lag;
      if (lag > 0) {
        const detail = ends.map((end) => `p${end.partition} ${partitions.find((p) => p.partition === end.partition)?.offset ?? '-'}/${end.high}`).join(' ');
        behind.push(`${group.groupId} ${topic}: ${lag} (${detail})`);
      }
    }
  }
  return { total, behind };
}

/** What the receivers and the tap saw, by destination. */
function observe(topology: Topology, receivers: ReadonlyMap<string, ChaosReceiver>, tap: KafkaTap): Observations {
  const arrivals = new Map<string, Map<string, Arrivals>>();
  for (const destination of topology.destinations) {
    const merged = new Map<string, Arrivals>();
    for (const name of destination.receivers) {
      for (const [key, seen] of receivers.get(name)!.arrivals) {
        const redelivered = Math.max(0, seen.delivered - 1);
        const entry = merged.get(key);
        if (entry === undefined) merged.set(key, { requests: seen.requests, delivered: seen.delivered, redelivered });
        else {
          entry.requests += seen.requests;
          entry.delivered += seen.delivered;
          entry.redelivered = (entry.redelivered ?? 0) + redelivered;
        }
      }
    }
    arrivals.set(destination.id, merged);
  }
  return { arrivals, deadLetters: tap.deadLetters as ReadonlyMap<string, ReadonlyMap<string, Kept>>, invalidKept: tap.invalidKept };
}

/** Everything one run holds: what it started, what it sent, what it saw. */
interface ChaosRun {
  profile: ChaosProfile & { seed: number };
  random: ReturnType<typeof createRandom>;
  runTag: string;
  logDir: string;
  say: Log;
  topology: Topology;
  ledger: Ledger;
  names: ReturnType<typeof topicNames>;
  clientId: string;
  receivers: Map<string, ChaosReceiver>;
  roles: Map<RoleName, RoleProcess>;
  crashes: UnexpectedExit[];
  samples: Map<RoleName, ResourceSample[]>;
  loadStats: LoadStats;
  fuzzStats: FuzzStats;
  broker?: DedicatedBroker;
  tap?: KafkaTap;
  writer?: KafkaWriter;
  /** Writes deletion requests to `deletions`. */
  deletionWriter?: KafkaWriter;
  deletionStats: DeletionStats;
  admin?: KafkaAdmin;
  gatewayUrl: string;
  /** What the roles' config files are written from (set once the receivers run). */
  settings?: Omit<ClusterSettings, 'adminPort'>;
  /** Config reloads so far. */
  reloads: number;
  /** The deliverer's SIGKILLs: when, the events of the requests the receivers held open then, and the group's commits before the successor started. */
  delivererKills: DelivererKill[];
}

/** A SIGKILL of the deliverer, as the run saw it. */
interface DelivererKill {
  atMs: number;
  openEvents: number;
  /** The deliverer group's commits once the process was gone, before its successor started (undefined: could not be read). */
  commits?: CommitsAtKill;
  /** From the kill to the commits read. */
  commitsReadAfterMs: number;
  /** Why the commits are missing, or how long the broker kept them waiting. */
  commitsNote?: string;
}

export async function runChaos(input: ChaosProfile, log: Log): Promise<ChaosReport> {
  const seed = input.seed ?? freshSeed();
  const profile = { ...input, seed };
  const random = createRandom(seed);
  const runTag = random.hex(8);
  const logDir = mkdtempSync(join(tmpdir(), `switchyard-chaos-${profile.name}-`));
  const startedAt = Date.now();
  const clock = () => `${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)}s`;
  const say: Log = (line) => log(`[chaos ${clock()}] ${line}`);
  say(`profile ${profile.name}, seed ${seed}, run ${runTag}; logs in ${logDir}`);
  // The roles run the compiled dist/ (test/support/cli-command.ts): compiled first when older than src/.
  buildIfStale(say);

  const run: ChaosRun = {
    profile,
    random,
    runTag,
    logDir,
    say,
    topology: chaosTopology({ failingShare: profile.failingShare, destinations: profile.destinations }),
    ledger: new Ledger(runTag),
    names: topicNames(`chaos-${runTag}.`),
    clientId: `chaos-${runTag}`,
    receivers: new Map(),
    roles: new Map(),
    crashes: [],
    samples: new Map(ROLES.map((role) => [role, []])),
    loadStats: emptyLoadStats(),
    fuzzStats: emptyFuzzStats(),
    gatewayUrl: '',
    reloads: 0,
    delivererKills: [],
    deletionStats: emptyDeletionStats(),
  };
  let sampler: NodeJS.Timeout | undefined;
  let faultRecords: FaultRecord[] = [];
  let shutdown = new Map<RoleName, string>();
  let loadMs = 0;
  let drained: Drained = { drainMs: undefined, drainAfterLastFaultMs: undefined, behind: [] };
  let tierRecords: ChaosReport['retryTierRecords'] = {};
  try {
    await startSystem(run);
    sampler = setInterval(() => sampleResources(run), profile.sampleEveryMs);
    const driven = await driveLoadAndFaults(run);
    loadMs = driven.loadEndedAt - driven.loadStartedAt;
    faultRecords = driven.faultRecords;
    drained = await waitForDrain(run, driven.loadEndedAt, faultRecords);
    tierRecords = await countTierRecords(run);
  } finally {
    clearInterval(sampler);
    shutdown = await stopRoles(run);
    await run.writer?.close().catch(() => undefined);
    await run.deletionWriter?.close().catch(() => undefined);
    await run.admin?.disconnect().catch(() => undefined);
  }

  const verdict = judge(run.ledger.expectations(), observe(run.topology, run.receivers, run.tap!));
  const deadLetterReasons = Object.fromEntries(
    [...(run.tap?.deadLetterReasons ?? [])].map(([destination, reasons]) => [destination, [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 8)]),
  );
  await run.tap?.close().catch(() => undefined);
  const trails = verdict.lost.length > 0 ? await followTrails(run, verdict) : {};
  const duplicates = await followDuplicates(run, faultRecords);
  const userOrder = await checkOrderedDestinations(run);
  for (const receiver of run.receivers.values()) await receiver.close();
  // The broker's own log goes with the roles' (its folder is removed with the broker).
  try {
    if (run.broker !== undefined) copyFileSync(run.broker.logFile, join(logDir, 'broker.log'));
  } catch {
    // no log to keep: the broker never started
  }
  await run.broker?.stop().catch(() => undefined);

  const report = buildReport({
    profile,
    runTag,
    logDir,
    verdict,
    loadStats: run.loadStats,
    fuzzStats: run.fuzzStats,
    faultRecords,
    crashes: run.crashes,
    roles: run.roles,
    shutdown,
    receivers: run.receivers,
    samples: run.samples,
    fuzzBodiesNotChecked: run.ledger.bodiesNotChecked,
    deadLetterReasons,
    timings: { loadMs, drainMs: drained.drainMs, drainAfterLastFaultMs: drained.drainAfterLastFaultMs, totalMs: Date.now() - startedAt },
    notDrained: drained.behind,
    trails,
    duplicateTrails: duplicates.trails,
    duplicateMechanisms: duplicates.mechanisms,
    delivererKills: duplicates.kills,
    userOrder,
    tierRecords,
  });
  writeFileSync(join(logDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

/** The broker, the receivers, the three role processes, and the harness's own Kafka clients. */
async function startSystem(run: ChaosRun): Promise<void> {
  const { profile, topology, say } = run;
  const broker = await startDedicatedBroker((line) => say(line));
  run.broker = broker;
  say(`broker ${broker.brokers}`);
  const deliveryTimeoutMs = parseSeconds(profile.delivery.timeout);
  for (const spec of topology.receivers) {
    const destination = topology.destinations.find((d) => d.receivers.includes(spec.name))!;
    run.receivers.set(
      spec.name,
      await startChaosReceiver({
        spec,
        random: run.random.fork(),
        deliveryTimeoutMs,
        sharedSecret: destination.sharedSecret,
        keyOf: (messageId, traceId) => run.ledger.keyOf(messageId, traceId),
        checkBody: (key, body) => run.ledger.checkBody(key, body),
      }),
    );
  }

  const gatewayPort = await freePort();
  run.gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const settings: Omit<ClusterSettings, 'adminPort'> = {
    brokers: broker.brokers,
    clientId: run.clientId,
    topicPrefix: `chaos-${run.runTag}.`,
    partitions: profile.partitions,
    gatewayPort,
    receiverUrls: new Map([...run.receivers].map(([name, r]) => [name, r.url()])),
    delivery: profile.delivery,
  };
  run.settings = settings;
  for (const role of ROLES) {
    // One config file per role: the same but for the admin port, so that each role's /metrics can be read.
    const adminPort = await freePort();
    const file = writeRoleConfig(run.logDir, role, chaosConfig(topology, { ...settings, adminPort }));
    run.roles.set(
      role,
      new RoleProcess(role, file, adminPort, run.logDir, (exit) => {
        run.crashes.push(exit);
        say(`CRASH: ${exit.role} (pid ${String(exit.pid)}) exited unasked: ${exit.exit}`);
      }),
    );
  }
  // The router creates every topic of the config; the others then find them.
  await run.roles.get('router')!.start();
  await Promise.all([run.roles.get('deliverer')!.start(), run.roles.get('gateway')!.start()]);
  say('roles started: gateway, router, deliverer');

  run.tap = await startTap({
    brokers: broker.brokers,
    topics: { callsInvalid: run.names.callsInvalid, deadLetters: new Map(topology.destinations.map((d) => [run.names.dlq(d.id), d.id])) },
    keyOf: (messageId, traceId) => run.ledger.keyOf(messageId, traceId),
    log: say,
  });
  run.writer = await createKafkaWriter(broker.brokers, run.names.calls);
  run.deletionWriter = await createKafkaWriter(broker.brokers, run.names.deletions);
  run.admin = createAdmin(createKafka({ brokers: [broker.brokers], clientId: 'chaos-admin', topicPrefix: '', partitions: 1, replicationFactor: 1 }, silentLogger()));
  await run.admin.connect();
}

function sampleResources(run: ChaosRun): void {
  for (const [role, process] of run.roles) {
    if (!process.running()) continue;
    void sampleRole(process.adminPort).then((sample) => {
      if (sample !== undefined) run.samples.get(role)!.push(sample);
    });
  }
}

/** The message the deliverer logs for each destination lane it restarts after a reload (src/delivery/deliverer-service.ts). */
const WORKER_RESTARTED = 'delivery settings changed; restarting its lane';

/**
 * Rewrites every role's config file with another delivery concurrency (half the
 * profile's, then back), which makes the deliverer stop every destination worker with
 * its requests in flight and retry partitions paused, and start new ones; routing
 * stays the same, so what each call must reach does not change. Resolves once the
 * deliverer restarted the worker of every enabled destination (so the next reload
 * cannot take this one's log lines for its own).
 */
async function reloadConfig(run: ChaosRun): Promise<string> {
  run.reloads += 1;
  const base = run.profile.delivery.concurrencyPerDestination;
  const concurrency = run.reloads % 2 === 1 ? Math.max(1, Math.floor(base / 2)) : base;
  const workers = run.topology.destinations.filter((d) => d.enabled).length;
  const applied = run.roles.get('deliverer')!.waitForLog(WORKER_RESTARTED, workers, 30_000);
  for (const [role, process] of run.roles) {
    const settings = { ...run.settings!, adminPort: process.adminPort, delivery: { ...run.settings!.delivery, concurrencyPerDestination: concurrency } };
    writeRoleConfig(run.logDir, role, chaosConfig(run.topology, settings));
  }
  await applied;
  return `delivery concurrency ${concurrency}; the deliverer restarted its workers`;
}

/** The load, the fuzzed inputs and the faults, all at once; resolves when the load is sent and the last fault is over. */
async function driveLoadAndFaults(run: ChaosRun): Promise<{ loadStartedAt: number; loadEndedAt: number; faultRecords: FaultRecord[] }> {
  const { profile, topology, ledger, say, loadStats, fuzzStats } = run;
  const writer = run.writer!;
  const target = { gatewayUrl: run.gatewayUrl, kafka: writer };
  const loadDurationMs = (profile.calls / profile.ratePerSecond) * 1000;
  const faults = planFaults(
    { kills: profile.kills, brokerRestarts: profile.brokerRestarts, receiverOutages: profile.receiverOutages, reloads: profile.reloads },
    loadDurationMs,
    'steady',
    run.random.fork(),
  );
  const loadStartedAt = Date.now();
  const progress = setInterval(() => {
    const requests = [...run.receivers.values()].reduce((sum, r) => sum + r.requests(), 0);
    say(
      `load: ${loadStats.requests} requests (${loadStats.failedRequests} unacknowledged); fuzz: ${fuzzStats.kafkaInputs + fuzzStats.gatewayInputs} inputs; receivers: ${requests} requests; tap: ${run.tap?.records() ?? 0} records`,
    );
  }, 10_000);

  const loadRandom = run.random.fork();
  const load = pace({
    total: profile.calls,
    perSecond: profile.ratePerSecond,
    maxInFlight: 16,
    dispatch: (next, due) => {
      // One request or write carries calls of one source: Kafka writes up to 50, gateway batches up to 25, a third single calls.
      const source = pickSource(topology, loadRandom);
      const size = Math.min(due, source.writeKey === undefined ? loadRandom.int(1, 50) : loadRandom.chance(0.3) ? 1 : loadRandom.int(1, 25));
      const calls = Array.from({ length: size }, (_, i) => makeLoadCall(topology, source, ledger, loadRandom, next + i));
      return { taken: size, done: sendLoadCalls(calls, target, ledger, loadRandom, loadStats) };
    },
  });

  // Fuzzed inputs at a steady rate over the same time as the load.
  const gatewayFuzz = Math.round(profile.fuzzInputs * profile.gatewayFuzzShare);
  const kafkaFuzz = profile.fuzzInputs - gatewayFuzz;
  const fuzzSeconds = Math.max(1, loadDurationMs / 1000);
  const kafkaFuzzRandom = run.random.fork();
  const kafkaInputs = fuzzCalls(kafkaFuzz, profile.seed);
  const fuzzKafka = pace({
    total: kafkaFuzz,
    perSecond: kafkaFuzz / fuzzSeconds,
    maxInFlight: 4,
    dispatch: (_next, due) => {
      const batch = [];
      for (let i = 0; i < Math.min(due, 50); i++) {
        const item = kafkaInputs.next();
        if (item.done === true) break;
        batch.push(item.value);
      }
      return { taken: Math.max(1, batch.length), done: feedKafka(batch, writer, topology, ledger, kafkaFuzzRandom, fuzzStats) };
    },
  });
  const gatewayFuzzRandom = run.random.fork();
  const gatewayInputs = fuzzRequests(gatewayFuzz, profile.seed + 1);
  const fuzzGateway = pace({
    total: gatewayFuzz,
    perSecond: gatewayFuzz / fuzzSeconds,
    maxInFlight: 4,
    dispatch: () => {
      const item = gatewayInputs.next();
      if (item.done === true) return { taken: 1, done: Promise.resolve() };
      return { taken: 1, done: feedGateway(item.value, run.gatewayUrl, topology, ledger, gatewayFuzzRandom, fuzzStats) };
    },
  });

  // Deletion requests at a steady rate over the same time, a few per write.
  const deletionRandom = run.random.fork();
  const deletions = pace({
    total: profile.deletions,
    perSecond: profile.deletions / fuzzSeconds,
    maxInFlight: 2,
    dispatch: (next, due) => {
      const count = Math.min(due, 5);
      return { taken: count, done: feedDeletions(next, count, run.deletionWriter!, run, deletionRandom, run.deletionStats) };
    },
  });

  const faultsDone = runFaults(faults, loadStartedAt, {
    kill: (role) => {
      if (role === 'deliverer') run.delivererKills.push({ atMs: Date.now(), openEvents: [...run.receivers.values()].reduce((sum, r) => sum + r.eventsInFlight(), 0), commitsReadAfterMs: 0 });
      return run.roles.get(role)!.kill();
    },
    restart: async (role) => {
      // The dead deliverer's commits, before its successor can move them.
      if (role === 'deliverer') await readCommitsAtKill(run, run.delivererKills.at(-1)!);
      await run.roles.get(role)!.start();
    },
    stopBroker: () => run.broker!.stopProcess(),
    startBroker: () => run.broker!.startProcess(),
    outage: (name, untilMs) => run.receivers.get(name)!.outageUntil(untilMs),
    reload: () => reloadConfig(run),
    log: say,
  });
  try {
    await Promise.all([load, fuzzKafka, fuzzGateway, deletions]);
    const loadEndedAt = Date.now();
    say(`load sent in ${((loadEndedAt - loadStartedAt) / 1000).toFixed(1)} s; waiting for the last faults`);
    return { loadStartedAt, loadEndedAt, faultRecords: await faultsDone };
  } finally {
    clearInterval(progress);
  }
}

/** How long a kill's restart waits for the deliverer group's commits (the broker may be coming back). */
const COMMITS_AT_KILL_BOUND_MS = 15_000;
const COMMITS_TRY_MS = 5_000;

/**
 * Reads the deliverer group's commits (offsets and their metadata) on every topic it
 * consumes, once the killed process is gone and before its successor starts: what the
 * successor will start from. Tries again until the broker answers or
 * COMMITS_AT_KILL_BOUND_MS passed; the kill then has no commits, and says why.
 */
async function readCommitsAtKill(run: ChaosRun, kill: DelivererKill): Promise<void> {
  const prefix = `chaos-${run.runTag}.`;
  const groupId = delivererGroupId({ kafka: { clientId: run.clientId, topicPrefix: prefix } });
  const topics = lagGroups(run.topology, prefix, run.profile.delivery.retryTiers).find((g) => g.groupId === groupId)!.topics;
  const started = Date.now();
  let tries = 0;
  let lastError = '';
  while (Date.now() - started < COMMITS_AT_KILL_BOUND_MS) {
    tries += 1;
    let timer: NodeJS.Timeout | undefined;
    try {
      const committed = await Promise.race([
        run.admin!.committedOffsets(groupId, topics),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${COMMITS_TRY_MS} ms`)), COMMITS_TRY_MS))),
      ]);
      kill.commits = commitsAtKill(committed);
      kill.commitsReadAfterMs = Date.now() - kill.atMs;
      if (tries > 1) kill.commitsNote = `read after ${tries} tries (${lastError})`;
      return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
      await sleep(500);
    } finally {
      clearTimeout(timer);
    }
  }
  kill.commitsReadAfterMs = Date.now() - kill.atMs;
  kill.commitsNote = `not read: the broker did not answer within ${COMMITS_AT_KILL_BOUND_MS} ms (${tries} tries; ${lastError})`;
  run.say(`the deliverer group's commits at the kill could not be read: ${kill.commitsNote}`);
}

interface Drained {
  drainMs: number | undefined;
  drainAfterLastFaultMs: number | undefined;
  /** Consumers still behind when the drain timed out. */
  behind: string[];
}

/**
 * Waits until every acknowledged input is accounted for and every consumer group has
 * committed everything, then until the receivers are quiet (late duplicates).
 */
async function waitForDrain(run: ChaosRun, loadEndedAt: number, faultRecords: readonly FaultRecord[]): Promise<Drained> {
  const { profile, say } = run;
  const lastFaultEndedAt = Math.max(0, ...faultRecords.map((r) => r.endedAtMs));
  const quietFrom = Math.max(loadEndedAt, lastFaultEndedAt);
  const groups = lagGroups(run.topology, `chaos-${run.runTag}.`, profile.delivery.retryTiers);
  const deadline = quietFrom + profile.drainTimeoutMs;
  let drained: Drained = { drainMs: undefined, drainAfterLastFaultMs: undefined, behind: [] };
  let lastReport = 0;
  for (;;) {
    const verdict = judge(run.ledger.expectations(), observe(run.topology, run.receivers, run.tap!));
    let lag: number | undefined;
    let behind: string[] = [];
    try {
      ({ total: lag, behind } = await consumerLag(run.admin!, groups));
    } catch {
      lag = undefined; // the broker between restarts; asked again in a second
    }
    if (verdict.lostCount === 0 && lag === 0) {
      const drainedAt = Date.now();
      drained = { drainMs: drainedAt - quietFrom, drainAfterLastFaultMs: lastFaultEndedAt > 0 ? drainedAt - lastFaultEndedAt : undefined, behind: [] };
      say(`drained ${((drainedAt - quietFrom) / 1000).toFixed(1)} s after the load and the last fault`);
      break;
    }
    if (Date.now() > deadline) {
      say(`NOT drained after ${profile.drainTimeoutMs} ms: ${verdict.lostCount} unaccounted, lag ${String(lag)}: ${behind.join('; ')}`);
      drained = { ...drained, behind };
      break;
    }
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      say(`draining: ${verdict.lostCount} not yet accounted for, consumer lag ${lag ?? 'unknown'} ${behind.join('; ')}`);
    }
    await sleep(1_000);
  }
  // Late duplicates: until the receivers have been quiet for 2 s (10 s at most).
  const settleUntil = Date.now() + 10_000;
  const lastRequestAt = () => Math.max(...[...run.receivers.values()].map((r) => r.lastRequestAt()));
  while (Date.now() < settleUntil && Date.now() - lastRequestAt() < 2_000) await sleep(250);
  return drained;
}

/** SIGTERM, intake first, as an orchestrator would; each must exit 0 (a clean shutdown). */
async function stopRoles(run: ChaosRun): Promise<Map<RoleName, string>> {
  const shutdown = new Map<RoleName, string>();
  for (const role of ['gateway', 'router', 'deliverer'] as const) {
    const process = run.roles.get(role);
    if (process !== undefined) shutdown.set(role, await process.stop());
  }
  return shutdown;
}

/** For each lost call, every record of it in the topics it should have passed through. */
async function followTrails(run: ChaosRun, verdict: Verdict): Promise<Record<string, TrailStop[]>> {
  if (run.broker === undefined) return {};
  run.say(`following the trail of ${verdict.lost.length} lost call(s) through the topics`);
  const { names } = run;
  const topics = [
    names.calls,
    names.callsInvalid,
    ...run.topology.destinations.flatMap((d) => [names.deliveries(d.id), ...run.profile.delivery.retryTiers.map((tier) => names.retry(d.id, tier)), names.dlq(d.id)]),
  ];
  try {
    const found = await findTrails(run.broker.brokers, topics, new Set(verdict.lost.map((f) => f.key)), (messageId, traceId) => run.ledger.keyOf(messageId, traceId));
    return Object.fromEntries(verdict.lost.map((f) => [f.key, found.get(f.key) ?? []]));
  } catch (error) {
    run.say(`could not follow the trails: ${String(error)}`);
    return {};
  }
}

/** How many duplicated events the report prints with their trails. */
const DUPLICATE_SAMPLE = 40;
/** How many duplicated events `followDuplicates` follows through the topics (all of them, up to this). */
const DUPLICATES_FOLLOWED = 5_000;

/** A deliverer kill with nothing measured (the topics could not be read, or no commits). */
const NOTHING_EXPOSED: KillExposure = { answeredNotCommitted: 0, unplaced: 0, redeliveredNotCommitted: 0, notCommittedAnsweredForLaterRecord: 0, notCommittedNotAnsweredAgain: 0, notAnsweredAgain: [], redeliveredCommitted: 0, committedRedeliveries: [] };

/**
 * One read of the topics for two questions. Every event answered 2xx twice at one URL
 * (load calls, up to DUPLICATES_FOLLOWED), with every record of it in the calls topic and
 * its destination's topics: how each came about (duplicateMechanisms), and a sample
 * spread over the run for the report (ChaosReport.duplicateTrails). And every load call
 * answered 2xx before a deliverer's kill, placed on its records in its destination's
 * topic and retry tiers: whether the kill left it uncommitted (ChaosReport.delivererKills).
 */
async function followDuplicates(
  run: ChaosRun,
  faultRecords: readonly FaultRecord[],
): Promise<{ trails: ChaosReport['duplicateTrails']; mechanisms: Record<string, number>; kills: ChaosReport['delivererKills'] }> {
  const killsWithout = (note: string): ChaosReport['delivererKills'] =>
    run.delivererKills.map((kill) => ({ ...summaryOf(kill), ...NOTHING_EXPOSED, commitsNote: [kill.commitsNote, note].filter((n) => n !== undefined).join('; ') }));
  if (run.broker === undefined) return { trails: [], mechanisms: {}, kills: killsWithout('the topics were not read') };
  const all: { key: string; destination: string; answeredAt: number[] }[] = [];
  // Per URL and load call answered 2xx before the last kill of the deliverer: the calls to place on their records.
  const lastKillAt = Math.max(0, ...run.delivererKills.map((k) => k.atMs));
  const answered: { url: string; key: string; destination: string; answeredAt: number[] }[] = [];
  for (const destination of run.topology.destinations) {
    for (const name of destination.receivers) {
      for (const [key, seen] of run.receivers.get(name)!.arrivals) {
        const at = seen.deliveredAt ?? [];
        if (key.startsWith('trace:')) continue;
        if (at.length > 1) all.push({ key, destination: destination.id, answeredAt: at });
        // NOTE: `stray:` keys name no one call: their records cannot be told apart.
        if (at.length > 0 && at[0]! <= lastKillAt && !key.startsWith('stray:')) answered.push({ url: name, key, destination: destination.id, answeredAt: at });
      }
    }
  }
  const followed = all.slice(0, DUPLICATES_FOLLOWED);
  if (followed.length === 0 && answered.length === 0) return { trails: [], mechanisms: {}, kills: killsWithout('nothing answered before it') };
  run.say(`following ${followed.length} of ${all.length} duplicated events, and ${answered.length} answered before the deliverer's last kill, through the topics`);
  const { names } = run;
  const retryTopics = (d: string) => run.profile.delivery.retryTiers.map((tier) => names.retry(d, tier));
  const destinations = [...new Set([...followed, ...answered].map((p) => p.destination))];
  const duplicated = [...new Set(followed.map((p) => p.destination))];
  const topics = [names.calls, ...destinations.flatMap((d) => [names.deliveries(d), ...retryTopics(d), ...(duplicated.includes(d) ? [names.dlq(d)] : [])])];
  let found: Map<string, TrailStop[]>;
  try {
    const wanted = new Set([...followed.map((p) => p.key), ...answered.map((p) => p.key)]);
    found = await findTrails(run.broker.brokers, topics, wanted, (messageId, traceId) => run.ledger.keyOf(messageId, traceId), new Set(followed.map((p) => p.key)));
  } catch (error) {
    run.say(`could not follow the duplicates: ${String(error)}`);
    return { trails: [], mechanisms: {}, kills: killsWithout(`the topics could not be read: ${String(error)}`) };
  }
  const traced = followed.map((p) => ({ ...p, stops: (found.get(p.key) ?? []).filter((stop) => stop.topic === names.calls || stop.topic.startsWith(names.deliveries(p.destination))) }));
  const mechanisms = duplicateMechanisms(
    traced.map((p) => ({
      answeredAt: p.answeredAt,
      deliveryRecords: p.stops.filter((s) => s.topic === names.deliveries(p.destination)).length,
      retryRecords: p.stops.filter((s) => retryTopics(p.destination).includes(s.topic)).length,
    })),
    faultRecords,
  );
  // Spread over the run: every n-th one.
  const step = Math.max(1, Math.floor(traced.length / DUPLICATE_SAMPLE));
  const trails = traced
    .filter((_, i) => i % step === 0)
    .slice(0, DUPLICATE_SAMPLE)
    .map(({ answeredAt, ...p }) => ({ ...p, answeredAtMs: answeredAt.map((t) => t - answeredAt[0]!) }));

  const events: AnsweredEvent[] = answered.map((p) => {
    const consumed = new Set([names.deliveries(p.destination), ...retryTopics(p.destination)]);
    const records = (found.get(p.key) ?? [])
      .filter((stop) => consumed.has(stop.topic))
      .map((stop) => ({ topic: stop.topic, partition: stop.partition, offset: BigInt(stop.offset), writtenAtMs: stop.writtenAtMs }));
    return { url: p.url, key: p.key, answeredAt: p.answeredAt, records };
  });
  const kills = run.delivererKills.map((kill, i): ChaosReport['delivererKills'][number] => {
    if (kill.commits === undefined) return { ...summaryOf(kill), ...NOTHING_EXPOSED };
    const exposure = killExposure({ atMs: kill.atMs, commits: kill.commits }, run.delivererKills[i + 1]?.atMs, events);
    run.say(
      `deliverer kill at ${new Date(kill.atMs).toISOString()}: ${kill.openEvents} events in open requests, ${exposure.answeredNotCommitted} answered 2xx but not committed (${exposure.unplaced} not found in the topics); answered again for the same record after it: ${exposure.redeliveredNotCommitted} not committed at the kill, ${exposure.redeliveredCommitted} COMMITTED; not committed and answered again for a later record (its retry): ${exposure.notCommittedAnsweredForLaterRecord}, not answered again: ${exposure.notCommittedNotAnsweredAgain}`,
    );
    return { ...summaryOf(kill), ...exposure };
  });
  return { trails, mechanisms, kills };
}

/** A kill's fields in the report, but for the commits themselves. */
function summaryOf(kill: DelivererKill): { atMs: number; openEvents: number; commitsRead: boolean; commitsReadAfterMs: number; commitsNote?: string } {
  return {
    atMs: kill.atMs,
    openEvents: kill.openEvents,
    commitsRead: kill.commits !== undefined,
    commitsReadAfterMs: kill.commitsReadAfterMs,
    ...(kill.commitsNote === undefined ? {} : { commitsNote: kill.commitsNote }),
  };
}

/** Records in each enabled destination's topic and in its retry tiers, once drained (ChaosReport.retryTierRecords). */
async function countTierRecords(run: ChaosRun): Promise<ChaosReport['retryTierRecords']> {
  const out: ChaosReport['retryTierRecords'] = {};
  if (run.admin === undefined) return out;
  const records = async (topic: string) => (await run.admin!.partitionEnds(topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  for (const destination of run.topology.destinations.filter((d) => d.enabled)) {
    try {
      const events = await records(run.names.deliveries(destination.id));
      let tierRecords = 0;
      for (const tier of run.profile.delivery.retryTiers) tierRecords += await records(run.names.retry(destination.id, tier));
      out[destination.id] = { events, tierRecords, perEvent: events === 0 ? 0 : tierRecords / events };
    } catch (error) {
      run.say(`could not count the retry-tier records of ${destination.id}: ${String(error)}`);
    }
  }
  return out;
}

/** The per-user order of each destination with `ordering: user`, read before the broker goes. */
async function checkOrderedDestinations(run: ChaosRun): Promise<Record<string, UserOrderResult>> {
  const results: Record<string, UserOrderResult> = {};
  if (run.broker === undefined) return results;
  for (const destination of run.topology.destinations.filter((d) => d.ordering === 'user')) {
    const receiver = run.receivers.get(destination.receivers[0]!);
    if (receiver === undefined) continue;
    try {
      results[destination.id] = await checkUserOrder(run.broker.brokers, run.names.deliveries(destination.id), receiver, (messageId, traceId) => run.ledger.keyOf(messageId, traceId));
      run.say(`per-user order of ${destination.id}: ${JSON.stringify({ ...results[destination.id], violations: results[destination.id]!.violations.slice(0, 3) })}`);
    } catch (error) {
      run.say(`could not check the per-user order of ${destination.id}: ${String(error)}`);
      results[destination.id] = { checked: 0, users: 0, violations: [`could not be checked: ${String(error)}`], violationCount: 1 };
    }
  }
  return results;
}

function parseSeconds(duration: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(duration);
  if (match === null) throw new Error(`chaos: delivery.timeout ${duration} must be in ms or s`);
  return Number(match[1]) * (match[2] === 's' ? 1000 : 1);
}

function buildReport(parts: {
  profile: ChaosProfile & { seed: number };
  runTag: string;
  logDir: string;
  verdict: Verdict;
  loadStats: LoadStats;
  fuzzStats: FuzzStats;
  faultRecords: FaultRecord[];
  crashes: UnexpectedExit[];
  roles: ReadonlyMap<RoleName, RoleProcess>;
  shutdown: ReadonlyMap<RoleName, string>;
  receivers: ReadonlyMap<string, ChaosReceiver>;
  samples: ReadonlyMap<RoleName, ResourceSample[]>;
  fuzzBodiesNotChecked: number;
  deadLetterReasons: ChaosReport['deadLetterReasons'];
  timings: ChaosReport['timings'];
  notDrained: string[];
  trails: Record<string, TrailStop[]>;
  duplicateTrails: ChaosReport['duplicateTrails'];
  duplicateMechanisms: Record<string, number>;
  delivererKills: ChaosReport['delivererKills'];
  userOrder: Record<string, UserOrderResult>;
  tierRecords: ChaosReport['retryTierRecords'];
}): ChaosReport {
  const { verdict, profile } = parts;
  const kills = parts.faultRecords.filter((r) => r.fault.kind === 'kill');
  const soak = profile.kills === 0 && profile.brokerRestarts === 0 && profile.reloads === 0;
  const roles: RoleSummary[] = [...parts.roles.values()].map((process) => ({
    role: process.role,
    kills: kills.filter((r) => r.fault.kind === 'kill' && r.fault.role === process.role).length,
    shutdown: parts.shutdown.get(process.role) ?? 'not stopped',
    logs: process.logCounts,
    topErrors: [...process.errorMessages].sort((a, b) => b[1] - a[1]).slice(0, 5),
    ...(soak ? { resources: trendOf(parts.samples.get(process.role) ?? []) } : {}),
  }));
  const receivers = [...parts.receivers.values()].map((r) => ({
    name: r.name,
    requests: r.requests(),
    failuresServed: Object.fromEntries(r.failuresServed) as Record<Failure | 'outage', number>,
    problems: r.problems,
    problemCount: r.problemCount(),
  }));
  const pairs = verdict.load.deliveredPairs + verdict.fuzz.deliveredPairs + verdict.deletion.deliveredPairs;
  const duplicates = verdict.load.duplicateDeliveries + verdict.fuzz.duplicateDeliveries + verdict.deletion.duplicateDeliveries;
  const failures: string[] = [];
  if (verdict.lostCount > 0) failures.push(`${verdict.lostCount} acknowledged input(s) lost (see verdict.lost)`);
  if (verdict.unexpectedCount > 0) failures.push(`${verdict.unexpectedCount} unexpected arrival(s) or record(s) (see verdict.unexpected)`);
  if (verdict.problemCount > 0) failures.push(`${verdict.problemCount} kept record(s) break the contract (see verdict.problems)`);
  const receiverProblems = receivers.reduce((sum, r) => sum + r.problemCount, 0);
  if (receiverProblems > 0) failures.push(`${receiverProblems} request(s) broke the webhook contract or carried a wrong body (see receivers[].problems)`);
  if (parts.crashes.length > 0) failures.push(`${parts.crashes.length} process(es) exited unasked: ${parts.crashes.map((c) => `${c.role} (${c.exit})`).join(', ')}`);
  for (const role of roles) if (role.shutdown !== 'exit code 0') failures.push(`${role.role} did not shut down cleanly on SIGTERM: ${role.shutdown}`);
  if (parts.timings.drainMs === undefined) failures.push(`not drained within ${profile.drainTimeoutMs} ms; consumers behind: ${parts.notDrained.join('; ') || 'none'}`);
  if (parts.loadStats.refusals.length > 0) failures.push(`the gateway refused ${parts.loadStats.refusals.length} valid load request(s): ${parts.loadStats.refusals[0]}`);
  if (parts.fuzzStats.oddAnswers.length > 0) failures.push(`the gateway gave ${parts.fuzzStats.oddAnswers.length} answer(s) the contract does not allow: ${parts.fuzzStats.oddAnswers[0]}`);
  const duplicateRate = pairs === 0 ? 0 : duplicates / pairs;
  if (profile.maxDuplicateRate !== undefined && duplicateRate >= profile.maxDuplicateRate) {
    failures.push(`${(duplicateRate * 100).toFixed(3)} % of delivered pairs delivered twice (${duplicates}); the ${profile.name} profile allows under ${profile.maxDuplicateRate * 100} %`);
  }
  for (const [destination, order] of Object.entries(parts.userOrder)) {
    if (order.violationCount > 0) failures.push(`${order.violationCount} event(s) of ${destination} delivered before an earlier event of their user (see userOrder)`);
    else if (order.checked === 0) failures.push(`no delivery of ${destination} could be checked for per-user order`);
  }
  const failedFaults = parts.faultRecords.filter((r) => r.error !== undefined).map((r) => `${r.fault.kind}: ${r.error}`);
  const brokerRestarts = parts.faultRecords.filter((r) => r.fault.kind === 'broker-restart').length;
  if (failedFaults.length > 0) failures.push(`${failedFaults.length} fault(s) could not be carried out: ${failedFaults[0]}`);
  const { gatewayStatus, ...fuzzRest } = parts.fuzzStats;
  return {
    profile,
    runTag: parts.runTag,
    logDir: parts.logDir,
    passed: failures.length === 0,
    failures,
    verdict,
    loadStats: parts.loadStats,
    fuzzStats: { ...fuzzRest, gatewayStatus: Object.fromEntries([...gatewayStatus].map(([k, v]) => [String(k), v])) },
    faults: {
      kills: kills.length,
      brokerRestarts,
      receiverOutages: parts.faultRecords.filter((r) => r.fault.kind === 'receiver-outage').length,
      reloads: parts.faultRecords.filter((r) => r.fault.kind === 'reload').length,
      failed: failedFaults,
    },
    crashes: parts.crashes,
    roles,
    receivers,
    fuzzBodiesNotChecked: parts.fuzzBodiesNotChecked,
    deadLetterReasons: parts.deadLetterReasons,
    timings: parts.timings,
    duplicateRate,
    duplicatesByDestination: duplicatesPerFault([verdict.load, verdict.fuzz, verdict.deletion], kills.length + brokerRestarts),
    duplicateCauses: duplicateCauses(
      [...parts.receivers.values()].flatMap((r) => [...r.arrivals.values()].map((a) => a.deliveredAt ?? [])),
      parts.faultRecords,
    ),
    trails: parts.trails,
    duplicateTrails: parts.duplicateTrails,
    duplicateMechanisms: parts.duplicateMechanisms,
    delivererKills: parts.delivererKills,
    retryTierRecords: parts.tierRecords,
    userOrder: parts.userOrder,
  };
}

/** Duplicates per destination over the tallies, and per fault that can cause them (none: per run). */
function duplicatesPerFault(tallies: readonly Verdict['load'][], faults: number): ChaosReport['duplicatesByDestination'] {
  const totals = new Map<string, number>();
  for (const tally of tallies) {
    for (const [destination, count] of Object.entries(tally.duplicatesByDestination)) totals.set(destination, (totals.get(destination) ?? 0) + count);
  }
  return Object.fromEntries(
    [...totals].sort((a, b) => b[1] - a[1]).map(([destination, count]) => [destination, { duplicates: count, perFault: count / Math.max(1, faults) }]),
  );
}
