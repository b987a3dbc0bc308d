// Defence in depth against a consumer group shared with someone else (another
// deployment with the same group prefix, a hand-made group id): the group's leader may
// hand this member partitions of topics it does not read, and then some of the topics
// it does read go to members that do not read them. NOTE: both clients' leaders assign
// only the topics they themselves read, so deliverer pods whose configs differ for a
// moment (a reload reaching them one after the other) see it briefly too. Such partitions are never consumed
// here; the member says so in an error and reports not ready until an assignment is
// its own again (docs/operations.md#share-a-cluster).
import type { Logger } from 'pino';

/** Tracks whether the member's latest assignment was its own, and logs each change. */
export class ForeignAssignment {
  private topics: readonly string[] = [];

  constructor(
    private readonly groupId: string,
    private readonly logger: Logger,
  ) {}

  /** The topics not subscribed to that the latest assignment held (empty: it was the member's own). */
  current(): readonly string[] {
    return this.topics;
  }

  /** A (re)join's assignment held partitions of `topics`, which this member does not subscribe to (empty: none). */
  joined(topics: readonly string[]): void {
    const before = this.topics;
    this.topics = [...topics];
    if (topics.length > 0) {
      this.logger.error(
        { groupId: this.groupId, topics },
        `consumer group ${this.groupId} assigned this member partitions of ${topics.join(', ')}, which it does not read: another deployment or program uses the same group id (or, for topics of this deployment, the group's leader already runs a config this member has not reloaded yet). ` +
          'Those partitions are not consumed here, and some of this member\'s own may go to members that do not read them; this process reports not ready until the group\'s assignment is its own. ' +
          'Give each deployment its own kafka.groupPrefix (or kafka.topicPrefix), or stop the other member',
      );
    } else if (before.length > 0) {
      this.logger.info({ groupId: this.groupId }, `consumer group ${this.groupId} assigns this member only topics it reads again`);
    }
  }

  /** A readiness detail while the assignment is not the member's own, else undefined. */
  notReady(): string | undefined {
    if (this.topics.length === 0) return undefined;
    return `consumer group ${this.groupId} assigned this member partitions of topics it does not read (${this.topics.join(', ')}): another deployment or program shares the group id`;
  }
}
