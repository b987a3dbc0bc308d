// Resource samples of the role processes, read from their own /metrics (prom-client's
// default process metrics), and the trend of a series: the soak's "no upward memory
// trend" is the least-squares slope of RSS and heap over time.

export interface ResourceSample {
  atMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** Memory outside the JS heap that V8 knows of (Buffers, zlib). */
  externalBytes: number;
  /** p99 of the event-loop delay since the previous sample, in ms. */
  eventLoopP99Ms: number;
}

function metricValue(exposition: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(exposition);
  return match === null ? undefined : Number(match[1]);
}

/** One sample from a role's admin port, or undefined when it does not answer. */
export async function sampleRole(adminPort: number): Promise<ResourceSample | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${adminPort}/metrics`, { signal: AbortSignal.timeout(3_000) });
    const text = await response.text();
    const rss = metricValue(text, 'process_resident_memory_bytes');
    const heap = metricValue(text, 'nodejs_heap_size_used_bytes');
    const external = metricValue(text, 'nodejs_external_memory_bytes');
    const lag = metricValue(text, 'nodejs_eventloop_lag_p99_seconds');
    if (rss === undefined || heap === undefined || external === undefined || lag === undefined) return undefined;
    return { atMs: Date.now(), rssBytes: rss, heapUsedBytes: heap, externalBytes: external, eventLoopP99Ms: lag * 1000 };
  } catch {
    return undefined;
  }
}

/** Least-squares slope of y over x (units of y per unit of x); 0 for fewer than two points. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const meanX = points.reduce((sum, p) => sum + p.x, 0) / n;
  const meanY = points.reduce((sum, p) => sum + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - meanX) * (p.y - meanY);
    den += (p.x - meanX) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

export interface Trend {
  samples: number;
  /** Over the samples after the warm-up, in MiB per minute. */
  rssSlopeMiBPerMin: number;
  heapSlopeMiBPerMin: number;
  externalSlopeMiBPerMin: number;
  /** RSS slope over the second half only: a process still settling shows a slope overall and none here. */
  rssSlopeSecondHalfMiBPerMin: number;
  rssFirstMiB: number;
  rssLastMiB: number;
  rssMaxMiB: number;
  eventLoopP99MaxMs: number;
  eventLoopP99MedianMs: number;
  /** The samples after the warm-up, at most 120 of them: [seconds since the first, RSS MiB, heap MiB, external MiB]. */
  series: [number, number, number, number][];
}

const MIB = 1024 * 1024;
const round = (n: number) => Math.round(n * 10) / 10;

/** The trend of one process's samples, the first `warmupShare` of them left out (JIT, pools and caches filling). */
export function trendOf(samples: readonly ResourceSample[], warmupShare = 0.2): Trend {
  const kept = samples.slice(Math.floor(samples.length * warmupShare));
  const perMinute = (key: 'rssBytes' | 'heapUsedBytes' | 'externalBytes', from = kept) => (slope(from.map((s) => ({ x: s.atMs, y: s[key] }))) * 60_000) / MIB;
  const lags = kept.map((s) => s.eventLoopP99Ms).sort((a, b) => a - b);
  return {
    samples: kept.length,
    rssSlopeMiBPerMin: perMinute('rssBytes'),
    heapSlopeMiBPerMin: perMinute('heapUsedBytes'),
    externalSlopeMiBPerMin: perMinute('externalBytes'),
    rssSlopeSecondHalfMiBPerMin: perMinute('rssBytes', kept.slice(Math.floor(kept.length / 2))),
    rssFirstMiB: (kept[0]?.rssBytes ?? 0) / MIB,
    rssLastMiB: (kept.at(-1)?.rssBytes ?? 0) / MIB,
    rssMaxMiB: Math.max(0, ...kept.map((s) => s.rssBytes)) / MIB,
    eventLoopP99MaxMs: lags.at(-1) ?? 0,
    eventLoopP99MedianMs: lags[Math.floor(lags.length / 2)] ?? 0,
    series: kept
      .filter((_, i) => i % Math.ceil(kept.length / 120) === 0)
      .map((s) => [Math.round((s.atMs - kept[0]!.atMs) / 1000), round(s.rssBytes / MIB), round(s.heapUsedBytes / MIB), round(s.externalBytes / MIB)]),
  };
}
