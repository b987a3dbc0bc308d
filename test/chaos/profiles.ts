// Run profiles of the chaos harness and the command-line knobs that adjust them.
import { parseArgs } from 'node:util';
import { BASE_DESTINATIONS } from './topology.js';

export interface DeliverySettings {
  timeout: string;
  retryTiers: string[];
  maxRetryWindow: string;
  concurrencyPerDestination: number;
}

export interface ChaosProfile {
  name: string;
  /** Load calls (through the gateway and straight to Kafka). */
  calls: number;
  /** Load calls per second. */
  ratePerSecond: number;
  /** Fuzzed inputs (records to `calls` and gateway requests), spread over the load. */
  fuzzInputs: number;
  /** Of the fuzzed inputs, the share sent through the gateway. */
  gatewayFuzzShare: number;
  /** Deletion requests (each naming one source), spread over the load. */
  deletions: number;
  /** SIGKILLs of a random role (each followed by a restart). */
  kills: number;
  /** Broker stops and restarts on the same data. */
  brokerRestarts: number;
  /** Spells during which the `steady` receiver answers 503 to everything. */
  receiverOutages: number;
  /** Config files rewritten under the running roles (delivery concurrency changed, so the deliverer restarts its workers). */
  reloads: number;
  /** Share of requests the `flaky` receiver fails. */
  failingShare: number;
  /** Destinations in all (at least topology.ts's BASE_DESTINATIONS; the rest are good `fleet-NN` ones). */
  destinations: number;
  /** The run fails when more delivered pairs than this share were delivered twice; undefined: reported only. */
  maxDuplicateRate?: number;
  partitions: number;
  delivery: DeliverySettings;
  /** How long the system may take to deliver or dead-letter everything after the load and the last fault. */
  drainTimeoutMs: number;
  /** Soak only: sample RSS and event-loop delay this often. */
  sampleEveryMs: number;
  seed?: number;
}

/**
 * NOTE: test-scale delivery settings, so dead letters come within seconds: a 1 s
 * timeout, tiers of 200 ms and 1 s, a window of 6 s. The window must still outlast a
 * receiver outage, or every call of the outage is dead-lettered (which is allowed, but
 * tests less).
 */
const TEST_DELIVERY: DeliverySettings = { timeout: '1s', retryTiers: ['200ms', '1s'], maxRetryWindow: '6s', concurrencyPerDestination: 64 };

export const PROFILES: Record<'short' | 'full' | 'soak', ChaosProfile> = {
  // Inside `npm test`: a few minutes on a 2-core machine.
  short: {
    name: 'short',
    calls: 5_000,
    ratePerSecond: 80,
    fuzzInputs: 10_000,
    gatewayFuzzShare: 0.1,
    deletions: 100,
    kills: 3,
    brokerRestarts: 1,
    receiverOutages: 2,
    reloads: 2,
    failingShare: 0.2,
    destinations: 10,
    partitions: 3,
    delivery: TEST_DELIVERY,
    drainTimeoutMs: 150_000,
    sampleEveryMs: 5_000,
  },
  full: {
    name: 'full',
    calls: 100_000,
    ratePerSecond: 160,
    fuzzInputs: 100_000,
    gatewayFuzzShare: 0.1,
    deletions: 2_000,
    kills: 21,
    brokerRestarts: 3,
    receiverOutages: 8,
    reloads: 6,
    failingShare: 0.2,
    // Issue 13: many destinations in one deliverer (the unsteady one among them).
    destinations: 50,
    maxDuplicateRate: 0.005,
    partitions: 3,
    delivery: TEST_DELIVERY,
    drainTimeoutMs: 400_000,
    sampleEveryMs: 5_000,
  },
  // Ten minutes at a steady moderate rate, no faults: memory and event-loop delay sampled.
  soak: {
    name: 'soak',
    calls: 60 * 10 * 60,
    ratePerSecond: 60,
    fuzzInputs: 6_000,
    gatewayFuzzShare: 0.1,
    deletions: 0,
    kills: 0,
    brokerRestarts: 0,
    receiverOutages: 0,
    reloads: 0,
    failingShare: 0.2,
    destinations: 9,
    partitions: 3,
    delivery: TEST_DELIVERY,
    drainTimeoutMs: 150_000,
    sampleEveryMs: 5_000,
  },
};

export const USAGE = `usage: npm run chaos -- [--profile short|full|soak] [knobs]

knobs (each overrides the profile's value):
  --calls N              load calls                     --rate N              load calls per second
  --fuzz N               fuzzed inputs                  --kills N             SIGKILLs of a random role
  --broker-restarts N    broker restarts                --outages N           receiver outages
  --reloads N            config reloads under load      --deletions N         deletion requests
  --failing-share F      share the flaky receiver fails --soak-minutes N      soak length (soak profile)
  --destinations N       destinations in all (≥ 9)
  --seed N               repeat a run's random choices  --report FILE         also write the report as JSON`;

export interface ChaosCommand {
  profile: ChaosProfile;
  reportFile?: string;
}

function positive(name: string, text: string | undefined, integer = true): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`--${name} must be a ${integer ? 'whole number' : 'number'} ≥ 0, got ${JSON.stringify(text)}`);
  }
  return value;
}

/** The profile a command line asks for; throws with a message for a person on bad arguments. */
export function parseChaosArgs(argv: string[]): ChaosCommand {
  const { values } = parseArgs({
    args: argv,
    options: {
      profile: { type: 'string', default: 'full' },
      calls: { type: 'string' },
      rate: { type: 'string' },
      fuzz: { type: 'string' },
      kills: { type: 'string' },
      'broker-restarts': { type: 'string' },
      outages: { type: 'string' },
      reloads: { type: 'string' },
      deletions: { type: 'string' },
      'failing-share': { type: 'string' },
      destinations: { type: 'string' },
      'soak-minutes': { type: 'string' },
      seed: { type: 'string' },
      report: { type: 'string' },
    },
  });
  const base = PROFILES[values.profile as keyof typeof PROFILES] as ChaosProfile | undefined;
  if (base === undefined) throw new Error(`--profile must be short, full or soak, got ${JSON.stringify(values.profile)}`);
  const profile: ChaosProfile = { ...base };
  const set = <K extends keyof ChaosProfile>(key: K, value: ChaosProfile[K] | undefined) => {
    if (value !== undefined) profile[key] = value;
  };
  set('ratePerSecond', positive('rate', values.rate));
  const minutes = positive('soak-minutes', values['soak-minutes'], false);
  if (minutes !== undefined) profile.calls = Math.round(minutes * 60 * profile.ratePerSecond);
  set('calls', positive('calls', values.calls));
  set('fuzzInputs', positive('fuzz', values.fuzz));
  set('kills', positive('kills', values.kills));
  set('brokerRestarts', positive('broker-restarts', values['broker-restarts']));
  set('receiverOutages', positive('outages', values.outages));
  set('reloads', positive('reloads', values.reloads));
  set('deletions', positive('deletions', values.deletions));
  const share = positive('failing-share', values['failing-share'], false);
  if (share !== undefined && share > 1) throw new Error('--failing-share must be between 0 and 1');
  set('failingShare', share);
  set('destinations', positive('destinations', values.destinations));
  if (profile.destinations < BASE_DESTINATIONS) throw new Error(`--destinations must be at least ${BASE_DESTINATIONS} (the base topology's)`);
  set('seed', positive('seed', values.seed));
  if (profile.ratePerSecond === 0) throw new Error('--rate must be above 0');
  return { profile, ...(values.report === undefined ? {} : { reportFile: values.report }) };
}
