// NOTE: kafkajs 2.2.4 (pinned) builds three maps of a consumer's assignment at each join
// by spreading the map built so far into a new object for each topic (`reduce` with
// `{ ...acc, [topic]: … }`): SubscriptionState.assign, and two in ConsumerGroup (the
// offset manager's map in its sync, the GROUP_JOIN event's in joinAndSync). Each costs the
// square of the topics, all in one synchronous stretch between the group's answer and
// the first heartbeat. The deliverer reads every destination's delivery topic and one
// per retry tier: at 1,000 destinations and the default four tiers, 5,000 topics, about
// 4.5 s per map on a 2-core machine, so the member could miss its 10 s session timeout
// right after each join and be sent back to join again (npm run bench -- destinations
// --tiers; docs/benchmarks.md#many-destinations-npm-run-bench----destinations). The same
// maps, each built in one pass. Same keys, values and key order; a topic named
// `__proto__` stays an own key, as in the spread.
//
// NOTE: the same second evaluation of consumerGroup.js serves its fetch, which found
// each answered topic's request by scanning the list of all topics requested
// (`requests.find`): the topics answered times those requested, at every fetch. At 1,000
// destinations a fetch names 2,000 topics and a full answer about 140 of them. Here the
// request of a topic is looked up in an index of that list (the first request of the
// topic, as `find` gives).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { compileFunction } from 'node:vm';

/** The reducer kafkajs spreads with, as it writes it (any accumulator name and spacing). */
const SPREAD_REDUCER = /\(\s*(\w+),\s*\{\s*topic,\s*partitions\s*\}\s*\)\s*=>\s*\(\{\s*\.\.\.\1,\s*\[topic\]:\s*partitions,?\s*\}\)/g;
/** The name the one-pass reducer has in the recompiled consumerGroup.js. */
const ONE_PASS = '__switchyardByTopic';
/** How many spread reducers consumerGroup.js of kafkajs 2.2.4 has; another count is another kafkajs, left as it is. */
const EXPECTED_REDUCERS = 2;
/** The fetch's scan for an answered topic's request, as kafkajs writes it. */
const REQUEST_SCAN = /requests\.find\(\s*\(\s*\{\s*topic\s*\}\s*\)\s*=>\s*topic\s*===\s*topicName\s*\)/g;
/** The name the lookup has in the recompiled consumerGroup.js. */
const REQUEST_OF = '__switchyardRequestOf';

/** Sets `acc[topic]` as an own, enumerable key (also for `__proto__`), and returns `acc`. */
function setOwn<T>(acc: Record<string, T>, topic: string, value: T): Record<string, T> {
  Object.defineProperty(acc, topic, { value, enumerable: true, writable: true, configurable: true });
  return acc;
}

/** The reducer that replaces the spread: the same map, built in place. */
function byTopic(acc: Record<string, number[]>, { topic, partitions }: { topic: string; partitions: number[] }): Record<string, number[]> {
  return setOwn(acc, topic, partitions);
}

interface TopicRequest {
  topic: string;
}

/** Each request list's index by topic: built at the first lookup, gone with the list (one fetch's). */
const requestIndexes = new WeakMap<readonly TopicRequest[], Map<string, TopicRequest>>();

/** The first request of `topic` in `requests`, as `requests.find` gives it, from the list's index. */
export function requestOf(requests: readonly TopicRequest[], topic: string): TopicRequest | undefined {
  let index = requestIndexes.get(requests);
  if (index === undefined) {
    index = new Map();
    for (const request of requests) if (!index.has(request.topic)) index.set(request.topic, request);
    requestIndexes.set(requests, index);
  }
  return index.get(topic);
}

/**
 * consumerGroup.js's source with each spread reducer replaced by the one-pass one and
 * the fetch's scan by the lookup, and how many of each were.
 */
export function rewriteConsumerGroup(source: string): { source: string; replaced: number; lookups: number } {
  let replaced = 0;
  let lookups = 0;
  const rewritten = source
    .replace(SPREAD_REDUCER, () => {
      replaced += 1;
      return ONE_PASS;
    })
    .replace(REQUEST_SCAN, () => {
      lookups += 1;
      return `${REQUEST_OF}(requests, topicName)`;
    });
  return { source: rewritten, replaced, lookups };
}

interface TopicPartitions {
  topic: string;
  partitions?: number[];
}

/** SubscriptionState.assign of kafkajs 2.2.4 (consumer/subscriptionState.js), in one pass. */
function assign(this: { assignedPartitionsByTopic: Record<string, TopicPartitions> }, topicPartitions: TopicPartitions[] = []): void {
  const assigned: Record<string, TopicPartitions> = {};
  for (const { topic, partitions = [] } of topicPartitions) setOwn(assigned, topic, { topic, partitions });
  this.assignedPartitionsByTopic = assigned;
}

type Prototype = Record<PropertyKey, unknown>;

let applied = false;

/**
 * Replaces SubscriptionState.assign, and ConsumerGroup's joinAndSync with the join and
 * sync it calls, by the same methods building their maps in one pass, and ConsumerGroup's
 * fetch by the same method finding requests in an index; once per process, only where
 * kafkajs has the shape this fix knows (else nothing changes).
 *
 * NOTE: the two ConsumerGroup methods use names private to their module (its symbols
 * and imports), so they are taken from a second evaluation of consumerGroup.js, whose
 * source differs only by the reducer; its imports are the modules already loaded. The
 * class the consumers are made from keeps its constructor and every other method.
 */
export function applyJoinFix(): void {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  let filename: string;
  let subscriptionState: Prototype | undefined;
  let consumerGroup: Prototype | undefined;
  try {
    subscriptionState = (require('kafkajs/src/consumer/subscriptionState.js') as { prototype?: Prototype }).prototype;
    filename = require.resolve('kafkajs/src/consumer/consumerGroup.js');
    consumerGroup = (require(filename) as { prototype?: Prototype }).prototype;
  } catch {
    return; // another kafkajs layout: left as it is
  }
  const original = subscriptionState?.assign;
  if (typeof original === 'function' && /\.\.\.assigned/.test(original.toString())) subscriptionState!.assign = assign;
  if (consumerGroup === undefined || typeof consumerGroup.joinAndSync !== 'function') return;
  const { source, replaced, lookups } = rewriteConsumerGroup(readFileSync(filename, 'utf8'));
  if (replaced !== EXPECTED_REDUCERS) return;
  const module = { exports: {} as { prototype?: Prototype } };
  const evaluate = compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname', ONE_PASS, REQUEST_OF], { filename });
  evaluate(module.exports, createRequire(filename), module, filename, dirname(filename), byTopic, requestOf);
  const rewritten = module.exports.prototype;
  if (rewritten === undefined || typeof rewritten.joinAndSync !== 'function') return;
  // joinAndSync calls the join and the sync by the second module's symbols: they come along.
  for (const symbol of Object.getOwnPropertySymbols(rewritten)) consumerGroup[symbol] = rewritten[symbol];
  consumerGroup.joinAndSync = rewritten.joinAndSync;
  if (lookups === 1 && typeof rewritten.fetch === 'function') consumerGroup.fetch = rewritten.fetch;
}
