// Every test file's setup: kafkajs's TimeoutNegativeWarning (Node 24) stays off the test
// output, as it does in the CLI, bench and chaos entry points (src/kafka/negative-timeout-warning.ts).
import { ignoreKafkajsNegativeTimeoutWarning } from '../../src/kafka/index.js';

ignoreKafkajsNegativeTimeoutWarning();
