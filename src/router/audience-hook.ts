// The hook through which the router hands the audiences what they need of each batch:
// a record to write with a call's deliveries, and deletion requests without
// `sourceIds`. The audiences implement it (src/audiences/router-hook.ts); it lives with
// its caller, so the arrow between the two rooms goes one way (docs/architecture.md).
import type { RoutedCall } from './plan-call.js';

/** A record the hook asks the router to write, in the same send as the call's deliveries. */
export interface AudienceEventOut<Pair = unknown> {
  topic: string;
  message: { key: Buffer; value: Buffer };
  /** A `seen` record's pair: handed back once the record is acknowledged (or abandoned). The router only carries it. */
  pair?: Pair;
}

/** The router's side of audiences and seen sources (RouterDeps.audiences). */
export interface AudienceHook<Pair = unknown> {
  /** The record to write for a valid call, if any. */
  event(routed: RoutedCall): AudienceEventOut<Pair> | undefined;
  /** The records that carried these pairs are acknowledged. */
  acknowledged(pairs: readonly Pair[]): void;
  /** The records that carried these pairs were not written: the batch failed. */
  abandoned(pairs: readonly Pair[]): void;
  /**
   * The record that hands a deletion request without `sourceIds` to the audience
   * processor: it sends the delete bodies to the sources that have seen the user.
   */
  deletion(userId: string, requestedAtMs: number): AudienceEventOut<Pair>;
}
