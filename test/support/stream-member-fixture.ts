// A partition-stream member in a process of its own, for takeover tests
// (test/integration/consumer-engine.test.ts): joins GROUP on TOPIC, waits until it was
// handed COUNT records, finishes the offsets FINISH (comma-separated, in that order),
// waits until the broker acknowledged their commit, prints `committed`, and then keeps
// running (heartbeating) until the test kills it: it never leaves the group.
// Usage: node --import tsx stream-member-fixture.ts BROKERS TOPIC GROUP COUNT FINISH
import { createAdmin, createKafka } from '../../src/kafka/index.js';
import { createDeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { InboundRecord } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig } from './config.js';

const [brokers, topic, groupId, count, finish] = process.argv.slice(2);
if (brokers === undefined || topic === undefined || groupId === undefined || count === undefined || finish === undefined) {
  process.stderr.write('usage: stream-member-fixture.ts BROKERS TOPIC GROUP COUNT FINISH\n');
  process.exit(2);
}

const settings = testConfig({
  kafka: { brokers: brokers.split(','), clientId: 'takeover-a', topicPrefix: 'x.', partitions: 1 },
  sources: [{ id: 'web' }],
  destinations: [{ id: 'x', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/' }] } }],
}).kafka;
const admin = createAdmin(createKafka(settings, silentLogger()));
await admin.connect();
const got: InboundRecord[] = [];
let gotAll: () => void = () => undefined;
const allHanded = new Promise<void>((resolve) => (gotAll = resolve));
const stream = createDeliveryStream(
  createKafka(settings, silentLogger()),
  { groupId, admin, commitEveryMs: 100, maxWaitTimeInMs: 200 },
  {
    accept: (records) => {
      got.push(...records);
      if (got.length >= Number(count)) gotAll();
      return true;
    },
    revoke: () => [],
  },
  {},
  silentLogger(),
);
await stream.start([topic]);
await allHanded;
let ticket = 0;
for (const offset of finish.split(',')) ticket = stream.ledger.finish(topic, 0, offset);
stream.ledger.commitSoon();
await new Promise<void>((resolve) => {
  const check = () => (stream.ledger.committedThrough() >= ticket ? resolve() : setTimeout(check, 20));
  check();
});
process.stdout.write(`committed ${got.map((r) => r.offset).join(',')}\n`);
// Runs on until killed (SIGKILL: no leave, no last commit).
setInterval(() => undefined, 60_000);
