// Every consumer group id Switchyard uses, named here and nowhere else
// (docs/kafka.md#consumer-groups). A group belongs to the deployment: its id starts
// with `kafka.groupPrefix`, else with `kafka.topicPrefix`, so two deployments that do
// not share topics never share a group either, and a prefixed ACL on that prefix
// covers every group of the deployment (docs/operations.md#share-a-cluster).
//
// NOTE: ids used to start with `kafka.clientId` (`<clientId>-router`). Two deployments
// on one cluster with different topic prefixes and the default client id then shared
// their groups: each member was handed partitions of the other deployment's topics,
// and some of each deployment's own partitions were consumed by nobody. The old ids
// are kept below (`legacyGroupIds`): an upgraded deployment carries their commits over
// once (group-upgrade.ts).
import { randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.js';

/** What group ids are made from: the config's `kafka` settings. */
export interface GroupNaming {
  kafka: Pick<Config['kafka'], 'clientId' | 'topicPrefix' | 'groupPrefix'>;
}

/** The start of every group id of the deployment: `kafka.groupPrefix`, else `kafka.topicPrefix`. */
export function groupPrefixOf(config: GroupNaming): string {
  return config.kafka.groupPrefix ?? config.kafka.topicPrefix;
}

/** A group of its own for one run (one process, one read), never committed to: `<prefix><purpose>.<random>`. */
function throwaway(config: GroupNaming, purpose: string): string {
  return `${groupPrefixOf(config)}${purpose}.${randomBytes(6).toString('hex')}`;
}

/** The router's group on `calls` and `deletions`: `<prefix>router`. */
export function routerGroupId(config: GroupNaming): string {
  return `${groupPrefixOf(config)}router`;
}

/** The audience processor's group on `audience.events`: `<prefix>audiences`. */
export function audiencesGroupId(config: GroupNaming): string {
  return `${groupPrefixOf(config)}audiences`;
}


/** Each router process follows `user.sources` in a group of its own: `<prefix>seen.<random>`. */
export function seenFollowerGroupId(config: GroupNaming): string {
  return throwaway(config, 'seen');
}

/** The deliverer's one group for every destination: `<prefix>deliverer`. */
export function delivererGroupId(config: GroupNaming): string {
  return `${groupPrefixOf(config)}deliverer`;
}

/** `switchyard replay`'s group on a destination's dead letters (its commits record what was moved): `<prefix>replay.<destination id>`. */
export function replayGroupId(config: GroupNaming, destinationId: string): string {
  return `${groupPrefixOf(config)}replay.${destinationId}`;
}

/** `switchyard replay --dry-run` reads with a group of its own, deleted afterwards: `<prefix>replay-dry-run.<destination id>.<random>`. */
export function replayDryRunGroupId(config: GroupNaming, destinationId: string): string {
  return throwaway(config, `replay-dry-run.${destinationId}`);
}

/** `switchyard replay --blocked`'s group on `calls.blocked` for one source (its commits record what was replayed): `<prefix>replay-blocked.<source id>`. */
export function replayBlockedGroupId(config: GroupNaming, sourceId: string): string {
  return `${groupPrefixOf(config)}replay-blocked.${sourceId}`;
}

/** `switchyard replay --blocked --dry-run` reads with a group of its own, deleted afterwards: `<prefix>replay-blocked-dry-run.<source id>.<random>`. */
export function replayBlockedDryRunGroupId(config: GroupNaming, sourceId: string): string {
  return throwaway(config, `replay-blocked-dry-run.${sourceId}`);
}

/** `switchyard dlq list` reads with a group of its own, deleted afterwards: `<prefix>dlq-list.<random>`. */
export function dlqListGroupId(config: GroupNaming): string {
  return throwaway(config, 'dlq-list');
}

/**
 * The ids of older versions, from `kafka.clientId`: read when the group that replaces
 * one has no commit yet (group-upgrade.ts, and the deliverer's partition stream).
 */
export const legacyGroupIds = {
  router: (config: GroupNaming): string => `${config.kafka.clientId}-router`,
  audiences: (config: GroupNaming): string => `${config.kafka.clientId}-audiences`,
  deliverer: (config: GroupNaming): string => `${config.kafka.clientId}-deliverer`,
  /** Older still: one deliverer group per destination. */
  delivererOfDestination: (config: GroupNaming, destinationId: string): string => `${config.kafka.clientId}-deliverer-${destinationId}`,
  replay: (config: GroupNaming, destinationId: string): string => `${config.kafka.clientId}-replay-${destinationId}`,
};
