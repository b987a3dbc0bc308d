// The verdict of a chaos run, as pure functions of what was sent and what was seen:
// every acknowledged call that was not filtered is at its receiver (a 2xx) or in its
// destination's dead-letter topic with an `error` header; every acknowledged input the
// service called invalid is in `calls.invalid`; nothing arrived where it should not.

/** What reached one destination's receivers for one call. */
export interface Arrivals {
  requests: number;
  /** Answered 2xx while the deliverer was listening. */
  delivered: number;
  /**
   * 2xx answers past the first at the same URL, summed over the destination's URLs.
   * NOTE: a destination sends each event to all its URLs at once (docs/webhooks.md#delivery-and-retries), so two
   * URLs both answering 2xx is the contract, not a duplicate; one URL getting the event
   * twice is. Undefined: one URL, so `delivered - 1`.
   */
  redelivered?: number;
  /** When each 2xx went out (ms since the epoch), for telling which fault a duplicate followed (duplicate-causes.ts). */
  deliveredAt?: number[];
}

/** Records found in a topic for one call. */
export interface Kept {
  count: number;
  /** Of those, with a non-empty `error` header. */
  withError: number;
}

/** What the harness sent, and what it therefore expects. */
export interface Expectation {
  /** The call's identity at the receivers: its messageId (load) or `trace:<trace id>` (fuzz). */
  key: string;
  origin: 'load' | 'fuzz' | 'deletion';
  /** The gateway answered 200 (or kept it, for an invalid one) or Kafka acknowledged the write. */
  acknowledged: boolean;
  /**
   * What the service said of it: `valid` (accepted), `invalid` (said it kept it in
   * `calls.invalid`), or `unknown` (written to Kafka directly: only `calls.invalid` tells).
   */
  claim: 'valid' | 'invalid' | 'unknown';
  /** Where it must arrive if valid, by the harness's routing oracle; undefined when the harness cannot read it as a call. */
  destinations: readonly string[] | undefined;
  /**
   * Inputs of one source with the same own messageId (fuzz: several inputs may share one):
   * the router delivers the first and drops the others as copies (docs/kafka.md#copies-of-a-call),
   * so a destination of the group is served when any of them got there.
   */
  copyGroup?: string;
}

export interface Observations {
  /** Per destination, per key. */
  arrivals: ReadonlyMap<string, ReadonlyMap<string, Arrivals>>;
  /** Per destination, per key. */
  deadLetters: ReadonlyMap<string, ReadonlyMap<string, Kept>>;
  /** `calls.invalid`, per key. */
  invalidKept: ReadonlyMap<string, Kept>;
}

export type Outcome = 'delivered' | 'dead-lettered' | 'filtered' | 'invalid-kept' | 'lost';

export interface Finding {
  key: string;
  destination?: string;
  what: string;
}

export interface OriginTally {
  /** Acknowledged inputs. */
  acknowledged: number;
  /** Sent but never acknowledged (may or may not have arrived; both are fine). */
  unacknowledged: number;
  /** Acknowledged calls every destination of which got it with a 2xx. */
  delivered: number;
  /** Acknowledged calls with at least one destination answered only by a dead letter (none lost). */
  deadLettered: number;
  /** Valid calls that no destination was to get (integrations, track filter, disabled destination). */
  filtered: number;
  /** (call, destination) pairs not served by this input but by another of its copy group (the router dropped it as a copy). */
  droppedCopyPairs: number;
  /** Inputs kept in `calls.invalid`. */
  invalidKept: number;
  /** Acknowledged calls with at least one destination that got it neither way. */
  lost: number;
  /** (call, destination) pairs that had to arrive. */
  expectedPairs: number;
  deliveredPairs: number;
  deadLetteredPairs: number;
  lostPairs: number;
  /** Pairs both delivered and dead-lettered (a 2xx that came after the deliverer gave up). */
  deliveredAndDeadLettered: number;
  /** 2xx deliveries past the first, summed over pairs. */
  duplicateDeliveries: number;
  /** The same, per destination. */
  duplicatesByDestination: Record<string, number>;
  /** Unacknowledged calls that arrived anyway (the write succeeded, the answer was lost). */
  unacknowledgedArrived: number;
}

export interface Verdict {
  load: OriginTally;
  fuzz: OriginTally;
  deletion: OriginTally;
  /** Losses, first ones: key, destination, why. */
  lost: Finding[];
  /** Arrivals, dead letters or invalid records that match nothing that was sent there. */
  unexpected: Finding[];
  /** Contract breaches of kept records (a dead letter without `error`, an accepted call kept as invalid). */
  problems: Finding[];
  /** Counts of the three lists (the lists are capped). */
  lostCount: number;
  unexpectedCount: number;
  problemCount: number;
}

const MAX_LISTED = 25;

function emptyTally(): OriginTally {
  return {
    acknowledged: 0,
    unacknowledged: 0,
    delivered: 0,
    deadLettered: 0,
    filtered: 0,
    droppedCopyPairs: 0,
    invalidKept: 0,
    lost: 0,
    expectedPairs: 0,
    deliveredPairs: 0,
    deadLetteredPairs: 0,
    lostPairs: 0,
    deliveredAndDeadLettered: 0,
    duplicateDeliveries: 0,
    duplicatesByDestination: {},
    unacknowledgedArrived: 0,
  };
}

/** Where a key arrived or was dead-lettered: destination ids. */
function seenAt(observations: Observations, key: string): Set<string> {
  const found = new Set<string>();
  for (const [destination, byKey] of observations.arrivals) if ((byKey.get(key)?.requests ?? 0) > 0) found.add(destination);
  for (const [destination, byKey] of observations.deadLetters) if ((byKey.get(key)?.count ?? 0) > 0) found.add(destination);
  return found;
}

export function judge(expectations: Iterable<Expectation>, observations: Observations): Verdict {
  const verdict: Verdict = { load: emptyTally(), fuzz: emptyTally(), deletion: emptyTally(), lost: [], unexpected: [], problems: [], lostCount: 0, unexpectedCount: 0, problemCount: 0 };
  const note = (list: 'lost' | 'unexpected' | 'problems', finding: Finding): void => {
    const count = list === 'lost' ? 'lostCount' : list === 'unexpected' ? 'unexpectedCount' : 'problemCount';
    verdict[count] += 1;
    if (verdict[list].length < MAX_LISTED) verdict[list].push(finding);
  };
  const known = new Set<string>();
  const all = [...expectations];
  // Per copy group, the destinations any of its inputs got to (delivered or dead-lettered),
  // and the inputs the router took as the call (they got somewhere, or were to go nowhere).
  // NOTE: the router keeps the first copy in its partition and drops the others whatever
  // their content, so a later copy the oracle routes elsewhere may reach nowhere at all.
  const servedByGroup = new Map<string, Set<string>>();
  const takenByGroup = new Map<string, Set<string>>();
  for (const expectation of all) {
    if (expectation.copyGroup === undefined || !expectation.acknowledged || expectation.destinations === undefined) continue;
    const served = servedByGroup.get(expectation.copyGroup) ?? new Set<string>();
    for (const destination of expectation.destinations) {
      if ((observations.arrivals.get(destination)?.get(expectation.key)?.delivered ?? 0) > 0 || (observations.deadLetters.get(destination)?.get(expectation.key)?.withError ?? 0) > 0) served.add(destination);
    }
    servedByGroup.set(expectation.copyGroup, served);
    if (expectation.destinations.length === 0 || seenAt(observations, expectation.key).size > 0) {
      takenByGroup.set(expectation.copyGroup, (takenByGroup.get(expectation.copyGroup) ?? new Set<string>()).add(expectation.key));
    }
  }
  /** An input that reached nowhere while another of its copy group was taken as the call: dropped whole. */
  const droppedWhole = (expectation: Expectation): boolean =>
    expectation.copyGroup !== undefined && seenAt(observations, expectation.key).size === 0 && [...(takenByGroup.get(expectation.copyGroup) ?? [])].some((key) => key !== expectation.key);

  for (const expectation of all) {
    const { key } = expectation;
    known.add(key);
    const tally = verdict[expectation.origin];
    const kept = observations.invalidKept.get(key);
    const where = seenAt(observations, key);
    const allowed = new Set(expectation.destinations ?? []);

    if (!expectation.acknowledged) {
      tally.unacknowledged += 1;
      if (where.size > 0) tally.unacknowledgedArrived += 1;
      for (const destination of where) {
        if (!allowed.has(destination)) note('unexpected', { key, destination, what: 'an unacknowledged call arrived where it was never to go' });
      }
      continue;
    }
    tally.acknowledged += 1;

    const invalid = expectation.claim === 'invalid' || (expectation.claim === 'unknown' && kept !== undefined);
    if (invalid) {
      if (kept === undefined) {
        tally.lost += 1;
        note('lost', { key, what: `the service kept it as invalid, yet it is not in calls.invalid` });
        continue;
      }
      tally.invalidKept += 1;
      if (kept.withError < kept.count) note('problems', { key, what: 'kept in calls.invalid without an error header' });
      for (const destination of where) note('unexpected', { key, destination, what: 'an invalid input was delivered' });
      continue;
    }
    if (kept !== undefined) note('problems', { key, what: 'accepted as valid, yet also kept in calls.invalid' });

    const destinations = expectation.destinations;
    if (destinations === undefined) {
      tally.lost += 1;
      note('lost', { key, what: 'the harness cannot read it as a call, yet it is not in calls.invalid' });
      continue;
    }
    for (const destination of where) {
      if (!allowed.has(destination)) note('unexpected', { key, destination, what: 'arrived at a destination it was filtered from' });
    }
    if (destinations.length === 0) {
      tally.filtered += 1;
      continue;
    }

    let lostHere = false;
    let deadLetteredHere = false;
    for (const destination of destinations) {
      tally.expectedPairs += 1;
      const arrivals = observations.arrivals.get(destination)?.get(key);
      const dead = observations.deadLetters.get(destination)?.get(key);
      const delivered = (arrivals?.delivered ?? 0) > 0;
      const deadLettered = (dead?.withError ?? 0) > 0;
      if (dead !== undefined && dead.withError < dead.count) note('problems', { key, destination, what: 'dead letter without an error header' });
      if (delivered) {
        tally.deliveredPairs += 1;
        const extra = arrivals!.redelivered ?? arrivals!.delivered - 1;
        tally.duplicateDeliveries += extra;
        if (extra > 0) tally.duplicatesByDestination[destination] = (tally.duplicatesByDestination[destination] ?? 0) + extra;
        if (deadLettered) tally.deliveredAndDeadLettered += 1;
      } else if (deadLettered) {
        tally.deadLetteredPairs += 1;
        deadLetteredHere = true;
      } else if (expectation.copyGroup !== undefined && (servedByGroup.get(expectation.copyGroup)?.has(destination) === true || droppedWhole(expectation))) {
        tally.droppedCopyPairs += 1;
      } else {
        tally.lostPairs += 1;
        lostHere = true;
        const requests = arrivals?.requests ?? 0;
        note('lost', {
          key,
          destination,
          what: requests > 0 ? `reached the receiver ${requests} time(s) but never with a 2xx, and is not dead-lettered` : 'never reached the receiver and is not dead-lettered',
        });
      }
    }
    if (lostHere) tally.lost += 1;
    else if (deadLetteredHere) tally.deadLettered += 1;
    else tally.delivered += 1;
  }

  // Whatever arrived, was dead-lettered or kept that matches nothing sent.
  const strays = (what: string, byDestination: ReadonlyMap<string, ReadonlyMap<string, unknown>>) => {
    for (const [destination, byKey] of byDestination) {
      for (const key of byKey.keys()) if (!known.has(key)) note('unexpected', { key, destination, what });
    }
  };
  strays('arrived, but matches no call the harness sent', observations.arrivals);
  strays('dead-lettered, but matches no call the harness sent', observations.deadLetters);
  for (const key of observations.invalidKept.keys()) {
    if (!known.has(key)) note('unexpected', { key, what: 'in calls.invalid, but matches no input the harness sent' });
  }
  return verdict;
}

/** Whether every acknowledged input is accounted for: the drain's end condition. */
export function accountedFor(verdict: Verdict): boolean {
  return verdict.lostCount === 0;
}
