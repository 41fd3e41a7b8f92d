import { OldestMessageTracker } from '../../../../lib/local/alarms/oldest-message';

describe('Class: OldestMessageTracker', () => {
  it('when a backlog sits, its age grows from when it was first seen, and an empty queue resets it', () => {
    const t = new OldestMessageTracker();
    expect(t.observe(0, 2)).toBe(0);
    expect(t.observe(10_000, 5)).toBe(10);
    expect(t.observe(20_000, 3)).toBe(10); // the two oldest drained: the cohort seen at 10 s is next
    expect(t.observe(30_000, 0)).toBe(0);
    expect(t.observe(40_000, 1)).toBe(0);
  });

  it('when consumers delete as fast as messages arrive, the deletion count keeps a steady depth young', () => {
    // Prepare: depth stays 4 while 4 messages are deleted and 4 arrive every 10 s
    const counted = new OldestMessageTracker();
    const blind = new OldestMessageTracker();

    // Act
    let ageCounted = 0;
    let ageBlind = 0;
    for (let i = 0; i <= 10; i += 1) {
      ageCounted = counted.observe(i * 10_000, 4, i * 4);
      ageBlind = blind.observe(i * 10_000, 4);
    }

    // Assess: without the count, it looks as old as the time since the queue was empty
    expect(ageCounted).toBe(0);
    expect(ageBlind).toBe(100);
  });

  it('when more messages were deleted than were held, the surplus came from new arrivals', () => {
    const t = new OldestMessageTracker();
    t.observe(0, 2, 0);
    // 2 held, 5 deleted, depth 3: 6 arrived and 3 of them stayed; the 2 held are gone
    expect(t.observe(10_000, 3, 5)).toBe(0);
    expect(t.observe(20_000, 3, 5)).toBe(10);
  });
});
