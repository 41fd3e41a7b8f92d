import fc from 'fast-check';
import { CHAOS_JOB_TYPES, makeWorkload } from '../../../../harness/chaos/workload';

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

  it('when the app declares a job type beyond the reference, the workload includes it with 1 to 3 copies, the same per seed', () => {
    // Act
    const a = makeWorkload({ seed: 7, jobs: 40, keys: 3, runId: 'r', declaredJobTypes: ['invoice.issue'] });
    const b = makeWorkload({ seed: 7, jobs: 40, keys: 3, runId: 'r', declaredJobTypes: ['invoice.issue'] });

    // Assess
    const invoices = a.jobs.filter((j) => j.type === 'invoice.issue');
    expect(invoices.length).toBeGreaterThan(0);
    expect(invoices.every((j) => [1, 2, 3].includes(j.copies))).toBe(true);
    expect(a.jobs.filter((j) => j.type === 'payment.capture').length).toBeGreaterThan(0);
    expect(b).toEqual(a);
  });

  it('when no job type is declared beyond the reference, the workload is the one the reference always had', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.integer({ min: 0, max: 30 }), (seed, jobs) => {
        // Act
        const plain = makeWorkload({ seed, jobs, keys: 3, runId: 'r' });
        const none = makeWorkload({ seed, jobs, keys: 3, runId: 'r', declaredJobTypes: [] });

        // Assess
        expect(none).toEqual(plain);
        expect(plain.jobs.every((j) => (CHAOS_JOB_TYPES as readonly string[]).includes(j.type))).toBe(true);
      }),
    );
  });
});
