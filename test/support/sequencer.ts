// The order vitest starts test files in (vitest.config.ts). With two workers the run
// ends when its last file does, so a long file started late sets the end: the longest
// start first. Vitest orders by the durations of an earlier run it cached (in
// node_modules/.vite), and a clean clone has none (it then takes the largest files
// first, which are not the slow ones): SLOW_FILES names the slowest, measured.
import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

/**
 * The slowest integration files, slowest first (a full run on this 2-core machine,
 * 2026-12-02, after the child processes moved to dist/; the first six from a quiet
 * clean-clone run, where deliver-kafka-kill, 142 s, started last and ended the run):
 * each starts brokers, daemons or CLI processes of its own, builds the Go receiver
 * example (a fresh Go build cache: some 30 s of CPU), or waits out timers it is there
 * to check. A file missing here only starts later; re-measure with
 * `npx vitest run --reporter=json --outputFile=times.json` when the list looks stale.
 */
export const SLOW_FILES: readonly string[] = [
  'test/integration/deliver-kafka-kill.test.ts',
  'test/integration/chaos-short.test.ts',
  'test/integration/router-exactly-once.test.ts',
  'test/integration/destination-lifecycle.test.ts',
  'test/integration/npm-start.test.ts',
  'test/integration/deliver-kafka.test.ts',
  'test/integration/receiver-examples.test.ts',
  'test/integration/cli-dead-letters.test.ts',
  'test/integration/producer-broker-restart.test.ts',
  'test/integration/topics-at-scale.test.ts',
  'test/integration/partition-stream-restart.test.ts',
  'test/integration/deliver-reload-destinations.test.ts',
  'test/integration/consumer-rejoin.test.ts',
  'test/integration/deliver-user-order.test.ts',
  'test/integration/attempt-history.test.ts',
  'test/integration/deliver-flaky-kill.test.ts',
  'test/integration/deliver-circuit-rate.test.ts',
  'test/integration/consumer-engine.test.ts',
  'test/integration/deliver-batches.test.ts',
  'test/integration/cli-check-config.test.ts',
  'test/integration/consumer-session.test.ts',
  'test/integration/audience-crash.test.ts',
  'test/integration/console-browser.test.ts',
  'test/integration/deliver-circuit-wait.test.ts',
  'test/integration/commit-after-broker-restart.test.ts',
  'test/integration/router-crash.test.ts',
  'test/integration/deliver-crash.test.ts',
  'test/integration/cli-basics.test.ts',
];

function slowRank(spec: TestSpecification): number {
  const rank = SLOW_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
  return rank === -1 ? SLOW_FILES.length : rank;
}

/** The unit project first (it needs no broker: it runs while the broker starts), then the slow files, then vitest's own order. */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const project = (spec: TestSpecification) => (spec.project.name === 'unit' ? 0 : 1);
    return ordered.sort((a, b) => project(a) - project(b) || slowRank(a) - slowRank(b));
  }
}
