// Runs until its vitest run is stopped (test/integration/test-runner-signal.test.ts).
import { it } from 'vitest';

it('waits to be stopped', async () => {
  process.stderr.write('fixture: waiting\n');
  await new Promise((resolve) => setTimeout(resolve, 590_000));
});
