import fc from 'fast-check';
import { makeWorkload } from '../../../lib/chaos/workload';

describe('Function: makeWorkload', () => {
  it('when the same seed is used twice, the workload is the same', () => {
    const a = makeWorkload({ seed: 42, jobs: 20, keys: 3, runId: 'r' });
    const b = makeWorkload({ seed: 42, jobs: 20, keys: 3, runId: 'r' });

    expect(b).toEqual(a);
  });

  it('when minPayments asks for more payments than were drawn, the last other jobs become payments and nothing else changes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 6 }),
        (seed, jobs, minPayments) => {
          // Act
          const plain = makeWorkload({ seed, jobs, keys: 3, runId: 'r' });
          const topped = makeWorkload({ seed, jobs, keys: 3, runId: 'r', minPayments });

          // Assess
          const payments = (w: typeof plain): number =>
            w.jobs.filter((j) => j.type === 'payment.capture').length;
          expect(payments(topped)).toBe(Math.max(payments(plain), Math.min(minPayments, jobs)));
          expect(topped.jobs.map(({ type: _type, ...rest }) => rest)).toEqual(
            plain.jobs.map(({ type: _type, ...rest }) => rest),
          );
          for (const [i, job] of topped.jobs.entries()) {
            if (job.type !== plain.jobs[i]?.type) expect(job.type).toBe('payment.capture');
          }
        },
      ),
    );
  });
});
