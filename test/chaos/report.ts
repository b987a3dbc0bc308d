// The chaos report as text for a terminal: the numbers an SRE asks for first.
import type { ChaosReport } from './run-chaos.js';
import type { OriginTally } from './verdict.js';

const seconds = (ms: number | undefined) => (ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);
const percent = (share: number) => `${(share * 100).toFixed(3)} %`;

function tallyLines(name: string, t: OriginTally): string[] {
  return [
    `${name}:`,
    `  acknowledged ${t.acknowledged}   unacknowledged ${t.unacknowledged} (${t.unacknowledgedArrived} arrived anyway)`,
    `  delivered ${t.delivered}   dead-lettered ${t.deadLettered}   filtered ${t.filtered}   kept invalid ${t.invalidKept}   LOST ${t.lost}`,
    `  pairs (call × destination): expected ${t.expectedPairs}, delivered ${t.deliveredPairs}, dead-lettered ${t.deadLetteredPairs}, dropped as copies ${t.droppedCopyPairs}, lost ${t.lostPairs}; duplicates ${t.duplicateDeliveries} ${JSON.stringify(t.duplicatesByDestination)}; delivered and also dead-lettered ${t.deliveredAndDeadLettered}`,
  ];
}

export function formatReport(report: ChaosReport): string {
  const { verdict, profile } = report;
  const lines = [
    `Switchyard chaos run — profile ${profile.name}, seed ${profile.seed} (repeat with --seed ${profile.seed}), logs ${report.logDir}`,
    `RESULT: ${report.passed ? 'PASSED' : 'FAILED'}`,
    ...report.failures.map((f) => `  - ${f}`),
    '',
    ...tallyLines('load calls', verdict.load),
    ...tallyLines('fuzzed inputs', verdict.fuzz),
    `  fuzz: ${report.fuzzStats.kafkaInputs} to the calls topic, ${report.fuzzStats.gatewayInputs} to the gateway (answers ${JSON.stringify(report.fuzzStats.gatewayStatus)}); ${report.fuzzBodiesNotChecked} large bodies not compared`,
    ...tallyLines('deletion requests', verdict.deletion),
    `duplicates: ${percent(report.duplicateRate)} of delivered pairs (an event 2xx-answered again by the same URL; target < ${report.profile.maxDuplicateRate === undefined ? '1 %' : `${report.profile.maxDuplicateRate * 100} %, a failure above`})`,
    `duplicates per destination, and per fault (${report.faults.kills} SIGKILLs + ${report.faults.brokerRestarts} broker restarts; at most concurrencyPerDestination ${report.profile.delivery.concurrencyPerDestination} per kill expected): ${
      Object.entries(report.duplicatesByDestination)
        .map(([destination, d]) => `${destination} ${d.duplicates} (${d.perFault.toFixed(1)}/fault)`)
        .join(', ') || 'none'
    }`,
    `duplicates by the fault that started last before them (within 60 s; a guess by timing): ${
      Object.entries(report.duplicateCauses ?? {})
        .map(([cause, c]) => `${cause} ${c.count} (median ${c.medianAfterFaultMs} ms after it, ${c.medianGapMs} ms after the first 2xx)`)
        .join(', ') || 'none'
    }`,
    `duplicates by how they came about (from the topics): ${
      Object.entries(report.duplicateMechanisms ?? {})
        .map(([mechanism, n]) => `${mechanism} ${n}`)
        .join(', ') || 'none'
    }`,
    avoidableLine(report),
    `per-user order (ordering: user; no event of a user first delivered before an earlier one): ${
      Object.entries(report.userOrder)
        .map(([destination, o]) => `${destination}: ${o.checked} events of ${o.users} users checked, ${o.violationCount} out of order`)
        .join('; ') || 'no ordered destination'
    }`,
    `retry-tier records per event (a record per failed attempt; none while a circuit is open): ${
      Object.entries(report.retryTierRecords ?? {})
        .filter(([, t]) => t.tierRecords > 0)
        .map(([destination, t]) => `${destination} ${t.perEvent.toFixed(2)} (${t.tierRecords} for ${t.events})`)
        .join(', ') || 'none'
    }`,
    `faults: ${report.faults.kills} SIGKILLs (${report.roles.map((r) => `${r.role} ${r.kills}`).join(', ')}), ${report.faults.brokerRestarts} broker restarts, ${report.faults.receiverOutages} receiver outages, ${report.faults.reloads} config reloads`,
    `crashes (exits nobody asked for): ${report.crashes.length}`,
    `timings: load ${seconds(report.timings.loadMs)}, drain ${seconds(report.timings.drainMs)} after the load and last fault (${seconds(report.timings.drainAfterLastFaultMs)} after the last fault), total ${seconds(report.timings.totalMs)}`,
    `gateway load requests: ${report.loadStats.requests}, retried ${report.loadStats.retriedRequests}, never acknowledged ${report.loadStats.failedRequests}`,
    '',
    'roles:',
    ...report.roles.map(
      (r) =>
        `  ${r.role.padEnd(9)} shutdown: ${r.shutdown}; logs warn ${r.logs.warn} error ${r.logs.error} fatal ${r.logs.fatal}` +
        (r.resources
          ? `; RSS ${r.resources.rssFirstMiB.toFixed(0)}→${r.resources.rssLastMiB.toFixed(0)} MiB (max ${r.resources.rssMaxMiB.toFixed(0)}), slope RSS ${r.resources.rssSlopeMiBPerMin.toFixed(2)} MiB/min (second half ${r.resources.rssSlopeSecondHalfMiBPerMin.toFixed(2)}), heap ${r.resources.heapSlopeMiBPerMin.toFixed(2)}, external ${r.resources.externalSlopeMiBPerMin.toFixed(2)} MiB/min; event-loop p99 median ${r.resources.eventLoopP99MedianMs.toFixed(1)} ms, max ${r.resources.eventLoopP99MaxMs.toFixed(1)} ms`
          : ''),
    ),
    ...report.roles.flatMap((r) => r.topErrors.map(([message, count]) => `    ${r.role} error ×${count}: ${message}`)),
    'dead letters, by reason (URLs left out):',
    ...Object.entries(report.deadLetterReasons).flatMap(([destination, reasons]) =>
      reasons.slice(0, 4).map(([reason, count]) => `  ${destination.padEnd(10)} ${String(count).padStart(7)}  ${reason.slice(0, 150)}`),
    ),
    'receivers:',
    ...report.receivers.map((r) => `  ${r.name.padEnd(16)} ${String(r.requests).padStart(7)} requests; failures served ${JSON.stringify(r.failuresServed)}${r.problemCount > 0 ? `; ${r.problemCount} PROBLEMS` : ''}`),
  ];
  const listed = [
    ...verdict.lost.map((f) => `  lost: ${f.key}${f.destination ? ` → ${f.destination}` : ''}: ${f.what}`),
    ...verdict.unexpected.map((f) => `  unexpected: ${f.key}${f.destination ? ` → ${f.destination}` : ''}: ${f.what}`),
    ...verdict.problems.map((f) => `  problem: ${f.key}${f.destination ? ` → ${f.destination}` : ''}: ${f.what}`),
    ...report.receivers.flatMap((r) => r.problems.map((p) => `  receiver problem: ${p}`)),
    ...Object.values(report.userOrder).flatMap((o) => o.violations.map((v) => `  out of order: ${v}`)),
    ...Object.entries(report.trails).map(
      ([key, stops]) =>
        `  trail of ${key}: ${stops.length === 0 ? 'in no topic at all' : stops.map((s) => `${s.topic}[${s.partition}]@${s.offset} ${JSON.stringify(s.headers)}`).join(' → ')}`,
    ),
    ...(report.duplicateTrails ?? []).map(
      (d) =>
        `  duplicate ${d.key} → ${d.destination}, 2xx at +${d.answeredAtMs.join('/+')} ms: ${d.stops.map((s) => `${s.topic.slice(s.topic.indexOf('.') + 1)}[${s.partition}]@${s.offset} a=${s.headers.attempt ?? '-'}`).join(' → ')}`,
    ),
    ...report.crashes.map((c) => `  crash: ${c.role} pid ${String(c.pid)} ${c.exit}; last lines:\n${c.lastLines.slice(-8).map((l) => `      ${l.slice(0, 300)}`).join('\n')}`),
  ];
  if (listed.length > 0) lines.push('', 'findings (first ones):', ...listed);
  return lines.join('\n');
}

/**
 * The duplicates Switchyard could have avoided (copies routed twice, a record sent again
 * after a reload) against those HTTP forces: a record sent again after a deliverer's kill
 * is one whose request was open then, or one answered 2xx whose progress the deliverer
 * group had not committed at the kill (docs/webhooks.md#duplicates). The kills' figures
 * count load calls per URL, as the redeliveries do.
 */
export function avoidableLine(report: Pick<ChaosReport, 'duplicateMechanisms' | 'delivererKills'>): string {
  const mechanisms = report.duplicateMechanisms ?? {};
  const avoidable = (mechanisms['routed twice'] ?? 0) + (mechanisms['redelivered reload'] ?? 0);
  const afterKills = mechanisms['redelivered kill deliverer'] ?? 0;
  const kills = report.delivererKills ?? [];
  const open = kills.reduce((sum, k) => sum + k.openEvents, 0);
  const notCommitted = kills.reduce((sum, k) => sum + k.answeredNotCommitted, 0);
  const redoable = open + notCommitted;
  const unread = kills.filter((k) => !k.commitsRead);
  const unplaced = kills.reduce((sum, k) => sum + k.unplaced, 0);
  const committed = kills.reduce((sum, k) => sum + k.redeliveredCommitted, 0);
  const sameRecord = kills.reduce((sum, k) => sum + k.redeliveredNotCommitted, 0);
  const laterRecord = kills.reduce((sum, k) => sum + k.notCommittedAnsweredForLaterRecord, 0);
  const notAgain = kills.reduce((sum, k) => sum + k.notCommittedNotAnsweredAgain, 0);
  const notes = [
    ...(unread.length > 0 ? [`the commits of ${unread.length} kill(s) could not be read, their answered events not counted: ${unread.map((k) => k.commitsNote ?? '?').join('; ')}`] : []),
    ...(unplaced > 0 ? [`${unplaced} answered event(s) not found in the topics, not counted`] : []),
    ...(committed > 0 ? [`${committed} event(s) answered again after a kill for a record COMMITTED at it (see delivererKills[].committedRedeliveries)`] : []),
  ];
  return (
    `duplicates of copies routed twice or records sent again after a reload: ${avoidable} (target 0); ` +
    `records sent again after the deliverer's ${kills.length} SIGKILL(s): ${afterKills}, against ${redoable} events a kill could redo ` +
    `(${open} in open requests, ${notCommitted} answered 2xx but not committed at the kill): ${afterKills <= redoable ? `${afterKills} ≤ ${redoable}` : `${afterKills} > ${redoable}, MORE than a kill can redo`}` +
    `; of those not committed, answered again at their URL: ${sameRecord} for the same record, ${laterRecord} through a later record (the successor's attempt failed; counted \`answer not taken\` above), ${notAgain} not again (another URL answered first, or dead-lettered)` +
    (notes.length > 0 ? `; ${notes.join('; ')}` : '')
  );
}
