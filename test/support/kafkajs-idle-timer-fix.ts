// Every test file's setup: the kafkajs clients a test makes without createKafka (the
// broker harness, test/support/kafka.ts) get the port's idle-timer fix from the start too
// (src/kafka/idle-timer-fix.ts), so they do not wake every millisecond while idle, and on
// Node 24 do not print TimeoutNegativeWarning for the negative timer that fix removes.
import { applyIdleTimerFix } from '../../src/kafka/index.js';

applyIdleTimerFix();
