/**
 * Estimates a queue's ApproximateAgeOfOldestMessage without receiving anything, from the depths
 * sampled over time (and, when known, the count of messages consumers deleted).
 */

/**
 * Estimates a queue's ApproximateAgeOfOldestMessage from depth observations alone: SQS cannot
 * peek, and receiving (even with VisibilityTimeout 0) would raise receive counts and move
 * messages towards the DLQ. Each observation compares the depth (visible + in flight + delayed,
 * i.e. every undeleted message) with the messages the tracker holds as cohorts of
 * (first seen, count):
 * - arrivals = depth increase + messages known consumers deleted since the last observation,
 *   pushed as one cohort first seen now (a message is dated when first seen, never earlier);
 * - removals = the rest of the difference, drained from the oldest cohort first;
 * - an empty queue forgets everything.
 * The age is now − the oldest cohort's first-seen time. It never overstates a message's age by
 * more than the drain-order assumption allows, and it understates it by up to one sampling
 * interval, and entirely for messages already in the queue when tracking started. Without the
 * deletion count, arrivals and deletions between two observations cancel out, so a queue that
 * holds a steady non-zero depth under traffic looks as old as the time since it was last empty;
 * with it (the platform counts its mappings' deletes), only removals nobody counted (redrive,
 * an operator's delete) are inferred. Oldest-first draining is an approximation too: a message
 * that keeps failing stays while younger ones go, and is then reported younger than it is.
 */
export class OldestMessageTracker {
  private readonly cohorts: { firstSeen: number; count: number }[] = [];
  private lastDeleted: number | undefined;

  /** Records the queue's depth at `at` (ms); returns the estimated age of its oldest message, seconds. */
  public observe(at: number, depth: number, deletedSoFar?: number): number {
    const known =
      deletedSoFar === undefined || this.lastDeleted === undefined
        ? 0
        : Math.max(0, deletedSoFar - this.lastDeleted);
    if (deletedSoFar !== undefined) this.lastDeleted = deletedSoFar;
    const held = this.cohorts.reduce((n, c) => n + c.count, 0);
    const net = depth - held;
    const arrivals = Math.max(0, net + known);
    let removals = arrivals - net;
    while (removals > 0 && this.cohorts.length > 0) {
      const oldest = this.cohorts[0] as { firstSeen: number; count: number };
      const taken = Math.min(oldest.count, removals);
      oldest.count -= taken;
      removals -= taken;
      if (oldest.count === 0) this.cohorts.shift();
    }
    // Removals beyond what was held took messages that arrived since the last observation.
    const stayed = arrivals - removals;
    if (stayed > 0) this.cohorts.push({ firstSeen: at, count: stayed });
    if (depth <= 0) this.cohorts.length = 0;
    const oldest = this.cohorts[0];
    return oldest === undefined ? 0 : Math.max(0, at - oldest.firstSeen) / 1000;
  }
}
