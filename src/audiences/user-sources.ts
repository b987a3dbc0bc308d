// The seen sources of the users of one partition (docs/kafka.md `user.sources`): for each
// user id, the source ids that have sent calls for it, in first-seen order. Pure; the
// engine applies sightings and deletions to it, the service restores it from the
// compacted topic and writes its changes back.

/**
 * userId → the changelog value, the JSON list of source ids (`["web","ios"]`).
 *
 * NOTE: the value strings are interned: users share a handful of distinct lists, so a
 * user costs its key and a Map entry only (the memory per user: docs/webhooks.md;
 * how it was measured: docs/benchmarks.md#figures-behind-the-code), spread over the router
 * processes by partition.
 */
export class UserSources {
  private readonly users = new Map<string, string>();
  /** Each distinct value once; bounded by the number of distinct source lists. */
  private readonly interned = new Map<string, string>();

  get size(): number {
    return this.users.size;
  }

  /** The user's seen sources, in first-seen order; empty when none has. */
  of(userId: string): string[] {
    const text = this.users.get(userId);
    return text === undefined ? [] : (JSON.parse(text) as string[]);
  }

  /** The stored value of the user, if any. */
  valueOf(userId: string): string | undefined {
    return this.users.get(userId);
  }

  /** Records that `sourceId` has seen the user; returns the new value, or undefined when the pair was known. */
  add(userId: string, sourceId: string): string | undefined {
    const text = this.users.get(userId);
    if (text === undefined) return this.set(userId, [sourceId]);
    const list = JSON.parse(text) as string[];
    if (list.includes(sourceId)) return undefined;
    list.push(sourceId);
    return this.set(userId, list);
  }

  /**
   * Forgets `sourceIds` for the user (all of them when undefined). Returns what to
   * write to the changelog: the new value, null (a tombstone: nothing left), or
   * undefined when nothing changed.
   */
  remove(userId: string, sourceIds?: readonly string[]): string | null | undefined {
    const text = this.users.get(userId);
    if (text === undefined) return undefined;
    const before = JSON.parse(text) as string[];
    const list = sourceIds === undefined ? [] : before.filter((id) => !sourceIds.includes(id));
    if (list.length === 0) {
      this.users.delete(userId);
      return null;
    }
    return list.length === before.length ? undefined : this.set(userId, list);
  }

  /** Loads one changelog record (null: a tombstone); returns the problem when the value cannot be read. */
  load(userId: string, value: string | null): string | undefined {
    if (value === null) {
      this.users.delete(userId);
      return undefined;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch (error) {
      return `not JSON (${(error as Error).message})`;
    }
    if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((id) => typeof id === 'string' && id !== '')) {
      return 'not a non-empty list of source ids';
    }
    this.set(userId, [...new Set(parsed as string[])]);
    return undefined;
  }

  private set(userId: string, list: readonly string[]): string {
    const text = JSON.stringify(list);
    let shared = this.interned.get(text);
    if (shared === undefined) this.interned.set(text, (shared = text));
    this.users.set(userId, shared);
    return shared;
  }
}
