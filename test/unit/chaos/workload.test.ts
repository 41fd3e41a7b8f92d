import fc from 'fast-check';
import { makeWorkload } from '../../../lib/chaos/workload';

describe('Function: makeWorkload', () => {
  it('when the same seed is used twice, the workload is the same', () => {
    const a = makeWorkload({ seed: 42, jobs: 20, keys: 3, runId: 'r' });
    const b = makeWorkload({ seed: 42, jobs: 20, keys: 3, runId: 'r' });

    expect(b).toEqual(a);
  });

  it('when a minimum asks for more jobs of a type than were drawn, the last jobs of types with some to spare change type and nothing else changes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 2 }),
        (seed, jobs, payments, reservations) => {
          // Act
          const plain = makeWorkload({ seed, jobs, keys: 3, runId: 'r' });
          const minimum = { 'payment.capture': payments, 'inventory.reserve': reservations };
          const topped = makeWorkload({ seed, jobs, keys: 3, runId: 'r', minimum });

          // Assess: enough of each when there are enough jobs; ids, keys and copies unchanged.
          const count = (w: typeof plain, type: string): number =>
            w.jobs.filter((j) => j.type === type).length;
          if (jobs >= payments + reservations) {
            expect(count(topped, 'payment.capture')).toBeGreaterThanOrEqual(payments);
            expect(count(topped, 'inventory.reserve')).toBeGreaterThanOrEqual(reservations);
          }
          expect(topped.jobs.map(({ type: _type, ...rest }) => rest)).toEqual(
            plain.jobs.map(({ type: _type, ...rest }) => rest),
          );
          const changed = topped.jobs.filter((job, i) => job.type !== plain.jobs[i]?.type);
          expect(changed.every((j) => j.type === 'payment.capture' || j.type === 'inventory.reserve')).toBe(
            true,
          );
          if (payments === 0 && reservations === 0) expect(changed).toEqual([]);
        },
      ),
    );
  });
});
